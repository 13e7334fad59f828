// pi's RpcClient (from PI_PACKAGE, the npm package's directory) started on heron:
// heron_cli.mjs stands in for the `node <cliPath>` the client runs. Shared by the drivers.
import { pathToFileURL } from "node:url";
import path from "node:path";

export async function startClient(baseUrl) {
  const pkg = process.env.PI_PACKAGE;
  const { RpcClient } = await import(pathToFileURL(path.join(pkg, "dist/modes/rpc/rpc-client.js")).href);
  return new RpcClient({
    cliPath: path.join(path.dirname(new URL(import.meta.url).pathname), "heron_cli.mjs"),
    model: "test-model",
    args: ["--base-url", baseUrl],
    cwd: process.cwd(),
  });
}
