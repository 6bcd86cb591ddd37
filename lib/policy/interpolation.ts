import { PolicyExpressionProblem, type PolicyExpression, type PolicyLanguage } from '../conventions/cel.ts';
import { LIMITS, limitNote } from '../limits.ts';
import { celToText } from './values.ts';

/**
 * CEL interpolation in action configuration strings, as the vendor documents it: `${expr}` is
 * evaluated at run time and its value written into the string (`X-Client-IP: "${conn.client_ip}"`).
 * A string that is exactly one `${expr}` keeps the value's own type (set-vars, log metadata);
 * inside a longer string values are written as text (lists and maps as JSON).
 */
export interface Template {
  readonly source: string;
  /** Whether the string holds any `${…}`. */
  readonly dynamic: boolean;
  /** The string with every `${…}` replaced by its value as text. */
  text(evaluate: (expression: PolicyExpression) => unknown): string;
  /** The value of a string that is exactly one `${…}`, else the same as `text`. */
  value(evaluate: (expression: PolicyExpression) => unknown): unknown;
}

type Part = string | PolicyExpression;

/** The end (index of the closing `}`) of the expression that starts at `from`, skipping quoted strings and nested braces. */
function expressionEnd(text: string, from: number): number {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const char = text[i]!;
    if (char === '"' || char === "'") {
      for (i++; i < text.length && text[i] !== char; i++) if (text[i] === '\\') i++;
    } else if (char === '{') depth++;
    else if (char === '}') {
      if (depth === 0) return i;
      depth--;
    }
  }
  return -1;
}

/** Compiles the `${…}` parts of `source`; throws PolicyExpressionProblem naming the part that does not compile. */
export function compileTemplate(source: string, language: PolicyLanguage): Template {
  const parts: Part[] = [];
  let literal = '';
  for (let i = 0; i < source.length; i++) {
    if (source[i] === '$' && source[i + 1] === '{') {
      const end = expressionEnd(source, i + 2);
      if (end < 0) throw new PolicyExpressionProblem(`\${ at ${i} has no closing }`);
      const expression = source.slice(i + 2, end);
      try {
        if (literal) parts.push(literal);
        parts.push(language.compile(expression));
      } catch (error) {
        throw new PolicyExpressionProblem(`\${${expression}}: ${(error as Error).message}`);
      }
      literal = '';
      i = end;
    } else literal += source[i];
  }
  if (literal) parts.push(literal);
  const text = (evaluate: (expression: PolicyExpression) => unknown) => {
    let out = '';
    for (const part of parts) {
      out += typeof part === 'string' ? part : celToText(evaluate(part));
      if (Buffer.byteLength(out) > LIMITS.policy_interpolated_bytes.value) throw new PolicyExpressionProblem(`the interpolated string is longer than ${LIMITS.policy_interpolated_bytes.value} bytes ${limitNote('policy_interpolated_bytes')}`);
    }
    return out;
  };
  const only = parts.length === 1 && typeof parts[0] !== 'string' ? parts[0] : undefined;
  return {
    source,
    dynamic: parts.some((part) => typeof part !== 'string'),
    text,
    value: (evaluate) => (only ? evaluate(only) : text(evaluate)),
  };
}
