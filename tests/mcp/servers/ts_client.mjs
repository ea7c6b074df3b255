// The official TypeScript SDK client driving `interrupt-sidecar mcp` (tests/mcp/test_typescript_client.py).
// argv: the bridge's command line. Prints one JSON line per step; waits for "next" on stdin
// between the interrupted call and the next one (the test begins a new turn in between).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import readline from "node:readline";

const [command, ...args] = process.argv.slice(2);
const say = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "ts-test-agent", version: "1.0.0" });
await client.connect(transport);
say({ event: "connected", pid: transport.pid, protocol: transport._protocolVersion ?? null });

const first = await client.callTool({ name: "run_command", arguments: { command: process.env.TS_SLEEP } });
say({ event: "result", result: first });

await lines.next(); // "next"
const second = await client.callTool({ name: "run_command", arguments: { command: "echo from-typescript" } });
say({ event: "result", result: second });

await client.close(); // the SDK's close: stdin ended, then SIGTERM, then SIGKILL to the bridge's pid
say({ event: "closed" });
process.exit(0);
