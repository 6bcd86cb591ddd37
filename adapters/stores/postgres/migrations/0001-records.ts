/**
 * Records as JSON, keyed by (account, kind, id). The "C" collation makes id order byte order, the
 * order Burrow's ids sort in, so the primary key serves `page` as a backward index range scan.
 */
export default `
CREATE TABLE records (
  account text COLLATE "C" NOT NULL,
  kind    text COLLATE "C" NOT NULL,
  id      text COLLATE "C" NOT NULL,
  data    jsonb NOT NULL,
  PRIMARY KEY (account, kind, id)
);
`;
