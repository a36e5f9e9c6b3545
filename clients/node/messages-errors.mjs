// Reads errors through toolgate with Anthropic's TypeScript SDK and prints,
// as JSON, the class, status and type of each error it raised. Run by
// internal/gateway/messages_test.go:
//
//   node messages-errors.mjs <baseURL> <model>[:stream] ...
//
// A ":stream" model is read with messages.stream (an error event in the
// middle of the stream), any other with messages.create (a whole answer).
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, ...models] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey: "k", maxRetries: 0 });
const out = [];
for (const spec of models) {
  const [model, mode] = spec.split(":");
  const params = { model, max_tokens: 1024, messages: [{ role: "user", content: "hi" }] };
  try {
    if (mode === "stream") {
      await client.messages.stream(params).finalMessage();
    } else {
      await client.messages.create(params);
    }
    out.push({ model: spec, class: "none" });
  } catch (e) {
    out.push({
      model: spec,
      class: e.constructor.name,
      overloaded: e instanceof Anthropic.OverloadedError,
      apiError: e instanceof Anthropic.APIError,
      status: e.status ?? 0,
      type: e.type ?? "",
    });
  }
}
console.log(JSON.stringify(out));
