// The vendor's client against Burrow in this process, with the embedding API alone.
import { createServer } from 'node:http';
import { createBurrow } from 'burrow-tunnels';
import { createNodeListener } from 'burrow-tunnels/http';
import { MemoryStore } from 'burrow-tunnels/memory';
import { Ngrok } from '@ngrok/ngrok-api';

const burrow = createBurrow({ store: new MemoryStore() });
const { token } = await burrow.createAccount();
const server = createServer(createNodeListener(burrow)).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const ngrok = new Ngrok({ apiToken: token, baseUrl: `http://127.0.0.1:${server.address().port}` });

const credential = await ngrok.credentials.create({ description: 'from the vendor client' });
console.log(JSON.stringify({ id: credential.id, keys: (await ngrok.apiKeys.list()).length }));
server.close();
