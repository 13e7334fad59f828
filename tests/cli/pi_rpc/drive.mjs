// Drives `heron --mode rpc` with pi's own RpcClient (from the npm package
// @earendil-works/pi-coding-agent 1.6), unchanged: a prompt with a tool call, get_state,
// steer during a tool call, compact, get_messages, abort during a stream, new_session.
// Prints one JSON object on stdout with what it saw; tests/cli/test_rpc_pi_client.py
// checks it. Argument: the model server's base URL. PI_PACKAGE: the package's directory.
import { startClient } from "./client.mjs";

const [baseUrl] = process.argv.slice(2);
const client = await startClient(baseUrl);
const out = {};
const types = (events) => events.map((e) => e.type);
const waitFor = (predicate, timeout = 20000) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => { stop(); reject(new Error("timed out waiting for an event")); }, timeout);
    const stop = client.onEvent((event) => {
      if (predicate(event)) { clearTimeout(timer); stop(); resolve(event); }
    });
  });

await client.start();
try {
  // 1. a prompt whose answer calls a tool
  const events = await client.promptAndWait("What do the notes say?", undefined, 30000);
  out.prompt = {
    types: types(events),
    toolStart: events.find((e) => e.type === "tool_execution_start"),
    toolEnd: events.find((e) => e.type === "tool_execution_end"),
    update: events.find((e) => e.type === "message_update"),
    turnEnd: events.find((e) => e.type === "turn_end"),
    agentEnd: events.find((e) => e.type === "agent_end"),
    settled: events.find((e) => e.type === "agent_settled"),
    runEnd: events.find((e) => e.type === "run_end"),
  };
  out.lastText = await client.getLastAssistantText();

  // 2. get_state
  out.state = await client.getState();

  // 3. steer while a tool runs
  const steerEvents = [];
  const unsubscribe = client.onEvent((e) => steerEvents.push(e));
  const toolStarted = waitFor((e) => e.type === "tool_execution_start");
  const settled = client.waitForIdle(30000);
  out.steerPromptDisposition = await client.prompt("Run the slow command.");
  await toolStarted;
  out.steerDisposition = await client.steer("Also mention the steer.");
  out.stateWhileRunning = await client.getState();
  try {
    await client.prompt("a second prompt while running");
    out.promptWhileRunning = "accepted";
  } catch (error) {
    out.promptWhileRunning = String(error.message);
  }
  await settled;
  unsubscribe();
  out.steer = { types: types(steerEvents), queueUpdates: steerEvents.filter((e) => e.type === "queue_update") };

  // 4. compact, then 5. get_messages
  out.compact = await client.compact("Keep the part about the steer.");
  out.messages = await client.getMessages();

  // 6. abort while the answer streams
  const abortEvents = [];
  const stopAbort = client.onEvent((e) => abortEvents.push(e));
  const firstDelta = waitFor((e) => e.type === "message_update");
  await client.prompt("Write a lot.");
  await firstDelta;
  await client.abort(); // pi's abort answers once the session is idle again
  out.abort = {
    types: types(abortEvents),
    settled: abortEvents.find((e) => e.type === "agent_settled"),
    end: abortEvents.filter((e) => e.type === "message_end").pop(),
  };
  stopAbort();
  out.stateAfterAbort = await client.getState();

  // 7. new_session
  out.newSession = await client.newSession();
  out.stateAfterNew = await client.getState();
  out.messagesAfterNew = await client.getMessages();
  out.stats = await client.getSessionStats();
} catch (error) {
  out.error = String(error && error.stack ? error.stack : error);
} finally {
  await client.stop();
}
process.stdout.write(JSON.stringify(out) + "\n");
