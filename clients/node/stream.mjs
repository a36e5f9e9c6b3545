// Streams one chat completion through toolgate with the official OpenAI
// Node SDK and prints, as JSON, what the SDK made of it. Run by
// internal/gateway/node_test.go:
//
//   node stream.mjs <baseURL> <model>
//
// It reads the stream twice over: through the SDK's accumulating helper
// (client.chat.completions.stream → finalChatCompletion), and chunk by
// chunk (the last finish_reason the choice carried, as code that keeps the
// last chunk's value sees it).
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "k", maxRetries: 0 });
const params = {
  model,
  stream: true,
  stream_options: { include_usage: true },
  messages: [{ role: "user", content: "weather in Paris?" }],
  tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
};

const out = {};
try {
  const final = await client.chat.completions.stream(params).finalChatCompletion();
  const c = final.choices[0];
  out.helper = {
    content: c.message.content,
    reasoning: c.message.reasoning_content ?? null,
    finish: c.finish_reason,
    calls: (c.message.tool_calls ?? []).map((t) => ({ id: t.id, name: t.function.name, arguments: t.function.arguments })),
  };
} catch (e) {
  out.helper = { error: String(e) };
}
try {
  let last = null;
  let content = "";
  for await (const chunk of await client.chat.completions.create(params)) {
    for (const ch of chunk.choices) {
      last = ch.finish_reason;
      if (typeof ch.delta?.content === "string") content += ch.delta.content;
      else if (ch.delta?.content != null) content += String(ch.delta.content);
    }
  }
  out.chunks = { lastFinish: last, content };
} catch (e) {
  out.chunks = { error: String(e) };
}
console.log(JSON.stringify(out));
