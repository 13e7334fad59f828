// Opens a session file with pi's own SessionManager (from PI_PACKAGE, the npm package
// @earendil-works/pi-coding-agent 1.6, unchanged) and prints what pi reads: the header,
// every entry, the leaf, the context it would send, and how its session list shows the
// file. Arguments: the session file and the sessions folder it is in.
// tests/cli/test_unanswered_pi_reader.py checks the output.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [file, dir] = process.argv.slice(2);
const pkg = process.env.PI_PACKAGE;
const { SessionManager } = await import(pathToFileURL(path.join(pkg, "dist/index.js")).href);

const manager = SessionManager.open(file, dir);
const context = manager.buildSessionContext();
const listed = await SessionManager.list(manager.getCwd(), dir);
const out = {
  header: manager.getHeader(),
  sessionId: manager.getSessionId(),
  entries: manager.getEntries().map((e) => ({ type: e.type, id: e.id, parentId: e.parentId, role: e.message?.role })),
  leafId: manager.getLeafId(),
  branch: manager.getBranch().map((e) => e.id),
  context: context.messages.map((m) => ({ role: m.role, content: m.content })),
  listed: listed.map((s) => ({ path: s.path, id: s.id, firstMessage: s.firstMessage, messageCount: s.messageCount })),
};
console.log(JSON.stringify(out));
