// mem0's npm SDK (mem0ai, pinned in package-lock.json) against a live `memoryd serve`.
// Run by tests/test_mem0_sdk_js.py: MEMORYD_URL is the server, MEMORYD_ADMIN_KEY and
// MEMORYD_ALICE_KEY two of its keys (an admin, and a key bound to the user alice).
import assert from "node:assert/strict";
import { test } from "node:test";
import MemoryClient from "mem0ai";

const host = process.env.MEMORYD_URL;
const admin = () => new MemoryClient({ apiKey: process.env.MEMORYD_ADMIN_KEY, host });

const QUICKSTART = [
  { role: "user", content: "Hi, I'm Alex. I'm a vegetarian and I'm allergic to nuts." },
  { role: "assistant", content: "Hello Alex! I'll remember your dietary needs." },
];

test("the quick-start runs unchanged", async () => {
  const client = admin();
  const added = await client.add(QUICKSTART, { userId: "alexjs", metadata: { food: "vegetarian" } });
  assert.ok(added.results.length > 0);
  await client.add([{ role: "user", content: "I live in Porto and work as a baker" }], {
    userId: "alexjs",
    agentId: "cook",
  });
  await client.add("Bea prefers trains over planes", { userId: "beajs", infer: false });

  const page = await client.getAll({ filters: { AND: [{ user_id: "alexjs" }] }, page: 1, pageSize: 50 });
  assert.ok(page.count >= 2);
  assert.equal(page.results.length, page.count);
  assert.deepEqual(new Set(page.results.map((m) => m.userId)), new Set(["alexjs"]));
  const texts = page.results.map((m) => m.memory).join(" ");
  assert.match(texts, /nuts/);
  assert.match(texts, /Porto/);

  const first = await client.getAll({ filters: { user_id: "alexjs" }, page: 1, pageSize: 1 });
  assert.equal(first.results.length, 1);
  assert.match(first.next, /page=2/);

  const cook = await client.getAll({ filters: { AND: [{ user_id: "alexjs" }, { agent_id: "cook" }] } });
  assert.ok(cook.results.length > 0);
  assert.ok(cook.results.every((m) => m.agentId === "cook"));
  const either = await client.getAll({ filters: { OR: [{ user_id: "alexjs" }, { user_id: "beajs" }] } });
  assert.deepEqual(new Set(either.results.map((m) => m.userId)), new Set(["alexjs", "beajs"]));
  const veg = await client.getAll({ filters: { user_id: "alexjs", metadata: { food: "vegetarian" } } });
  assert.ok(veg.results.length > 0);
  assert.ok(veg.results.every((m) => m.metadata.food === "vegetarian"));
  const dated = await client.getAll({ filters: { user_id: "alexjs", created_at: { gte: "2000-01-01" } } });
  assert.equal(dated.count, page.count);

  const found = await client.search("Is Alex a vegetarian?", { filters: { user_id: "alexjs" } });
  assert.ok(found.results.length > 0);
  assert.ok(found.results.every((h) => h.userId === "alexjs"));
  const top = await client.search("allergic to nuts", { filters: { user_id: "alexjs" }, topK: 1 });
  assert.equal(top.results.length, 1);
  assert.match(top.results[0].memory, /nuts/);
  const none = await client.search("allergic to nuts", { filters: { user_id: "alexjs" }, threshold: 1 });
  assert.deepEqual(none.results, []);

  const id = top.results[0].id;
  const got = await client.get(id);
  assert.equal(got.id, id);
  const updated = await client.update(id, { text: "Alex is allergic to peanuts" });
  assert.equal(updated.memory, "Alex is allergic to peanuts");
  const history = await client.history(id);
  assert.deepEqual(history.map((h) => h.event), ["ADD", "UPDATE"]);

  const ids = (await client.getAll({ filters: { user_id: "alexjs" } })).results.map((m) => m.id);
  await client.batchUpdate([{ memoryId: ids[0], text: "Alex bakes every Sunday" }]);
  assert.equal((await client.get(ids[0])).memory, "Alex bakes every Sunday");
  await client.batchDelete([ids[0]]);
  await client.delete(ids[1]);
  const left = await client.getAll({ filters: { user_id: "alexjs" } });
  assert.equal(left.count, ids.length - 2);

  const users = await client.users();
  const names = new Set(users.results.map((e) => `${e.type}:${e.name}`));
  assert.ok(names.has("user:alexjs") && names.has("user:beajs") && names.has("agent:cook"));

  await client.deleteAll({ userId: "alexjs" });
  assert.equal((await client.getAll({ filters: { user_id: "alexjs" } })).count, 0);
  await client.deleteUsers({ userId: "beajs" });
  assert.equal((await client.getAll({ filters: { user_id: "beajs" } })).count, 0);
});

test("a user's key reaches only that user", async () => {
  const bob = (await admin().add("Bob hides the spare key under the mat", { userId: "bobjs", infer: false })).results[0];
  const alice = new MemoryClient({ apiKey: process.env.MEMORYD_ALICE_KEY, host });
  await alice.add("Alice's locker code is 4412", { infer: false });
  const mine = await alice.getAll({ filters: { OR: [{ user_id: "alice" }, { user_id: "bobjs" }] } });
  assert.deepEqual(new Set(mine.results.map((m) => m.userId)), new Set(["alice"]));
  await assert.rejects(alice.get(bob.id), /no memory with id/);
  await assert.rejects(alice.search("spare key", { filters: { user_id: "bobjs" } }), /not allowed/);
  assert.equal((await admin().get(bob.id)).memory, "Bob hides the spare key under the mat");
});
