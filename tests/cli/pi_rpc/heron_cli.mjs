// What pi's RpcClient starts as its "cliPath": RpcClient runs `node <cliPath> --mode rpc
// <args>`, so this file hands those arguments to heron unchanged and gives heron its own
// stdin, stdout and stderr (no copying in between). HERON_PYTHON names the interpreter.
import { spawn } from "node:child_process";

const python = process.env.HERON_PYTHON || "python3";
const child = spawn(python, ["-m", "heron.cli.main", ...process.argv.slice(2)], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
