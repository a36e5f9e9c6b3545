// Reads every answer of the quirk conformance corpus through toolgate with
// the official OpenAI Node SDK and prints, as JSON, what the SDK made of
// each. Run by internal/gateway/corpus_test.go:
//
//   node corpus.mjs <baseURL> <model>[:whole] ...
//
// A streamed answer goes through the SDK's accumulating helper
// (client.chat.completions.stream → finalChatCompletion), the reasoning
// taken from the chunks it saw; a whole one (":whole") through create.
import OpenAI from "openai";

const [baseURL, ...models] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "k", maxRetries: 0 });
const tools = [
  {
    type: "function",
    function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
  },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} } } },
];

async function read(spec) {
  const [model, mode] = spec.split(":");
  const params = { model, messages: [{ role: "user", content: "weather in Paris?" }], tools };
  let reasoning = "";
  let final;
  if (mode === "whole") {
    final = await client.chat.completions.create(params);
    reasoning = final.choices[0].message.reasoning_content ?? "";
  } else {
    const stream = client.chat.completions.stream({ ...params, stream: true });
    stream.on("chunk", (chunk) => {
      for (const ch of chunk.choices) reasoning += ch.delta?.reasoning_content ?? "";
    });
    final = await stream.finalChatCompletion();
  }
  const c = final.choices[0];
  return {
    model,
    content: c.message.content ?? "",
    reasoning,
    finish: c.finish_reason,
    calls: (c.message.tool_calls ?? []).map((t) => ({ id: t.id, name: t.function.name, arguments: t.function.arguments })),
  };
}

const out = [];
for (const spec of models) {
  try {
    out.push(await read(spec));
  } catch (e) {
    out.push({ model: spec.split(":")[0], error: String(e) });
  }
}
console.log(JSON.stringify(out));
