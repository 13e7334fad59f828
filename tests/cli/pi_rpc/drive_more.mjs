// Drives `heron --mode rpc` with pi's RpcClient through more of pi 1.6's documented
// commands than drive.mjs: a prompt with an image, follow_up, set_model, thinking levels,
// session stats, fork / get_fork_messages, set_session_name, switch_session, get_commands,
// and error responses for bad commands. Prints one JSON object; checked by
// tests/cli/test_rpc_pi_client_more.py. Argument: the model server's base URL.
import { startClient } from "./client.mjs";

const [baseUrl] = process.argv.slice(2);
const client = await startClient(baseUrl);
const out = {};
const attempt = async (fn) => {
  try {
    return { ok: await fn() };
  } catch (error) {
    return { error: String(error.message).split(". Stderr:")[0] };
  }
};
// One pixel PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

await client.start();
try {
  // 1. a prompt with an image whose answer calls bash (tool updates), then answers
  out.imagePrompt = await client.promptAndWait("What is in this image?",
    [{ type: "image", data: PNG, mimeType: "image/png" }], 30000);

  // 2. follow_up while a run is going: delivered once the agent would stop
  const followEvents = [];
  const stop = client.onEvent((e) => followEvents.push(e));
  const settled = client.waitForIdle(30000);
  await client.prompt("Run the slow command.");
  out.followUpDisposition = await client.followUp("And then say bye.", [{ type: "image", data: PNG, mimeType: "image/png" }]);
  out.followUpViaPrompt = await client.prompt("And a third thing.", undefined, "followUp");
  await settled;
  stop();
  out.followEvents = followEvents;

  // 3. models and thinking levels
  out.models = await client.getAvailableModels();
  const m = out.models[0];
  out.setModel = await attempt(() => client.setModel(m.provider, m.id));
  out.setModelBad = await attempt(() => client.setModel("nope", "no-such-model"));
  out.levels = await client.getAvailableThinkingLevels();
  out.cycle = await attempt(() => client.cycleThinkingLevel());
  out.setLevel = await attempt(() => client.setThinkingLevel("low"));
  out.setLevelBad = await attempt(() => client.setThinkingLevel("ludicrous"));
  out.stateAfterLevel = await client.getState();

  // 4. stats, name, fork
  out.stats = await client.getSessionStats();
  out.setName = await attempt(() => client.setSessionName("audit run"));
  out.stateNamed = await client.getState();
  out.forkMessages = await client.getForkMessages();
  out.firstState = await client.getState();
  out.fork = await attempt(() => client.fork(out.forkMessages[1].entryId));
  out.stateForked = await client.getState();
  out.messagesForked = await client.getMessages();
  out.forkBad = await attempt(() => client.fork("no-such-entry"));

  // 5. back to the first session
  out.switch = await attempt(() => client.switchSession(out.firstState.sessionFile));
  out.stateSwitched = await client.getState();
  out.switchBad = await attempt(() => client.switchSession("/no/such/session.jsonl"));

  // 6. discoverable commands; then a template through prompt
  out.commands = await attempt(() => client.getCommands());
  out.templateRun = (await client.promptAndWait("/fix-tests tests/unit", undefined, 30000)).map((e) => e.type);

  // 7. bad commands
  out.unknown = await attempt(() => client.send({ type: "definitely_not_a_command" }).then((r) => r));
  out.promptNoMessage = await attempt(() => client.send({ type: "prompt" }).then((r) => r));
  out.steerIdle = await attempt(() => client.steer("nobody is running"));
  out.clone = await attempt(() => client.clone());
  out.entries = await attempt(() => client.getEntries());
  out.tree = await attempt(() => client.getTree());
} catch (error) {
  out.error = String(error && error.stack ? error.stack : error);
} finally {
  await client.stop();
}
process.stdout.write(JSON.stringify(out) + "\n");
