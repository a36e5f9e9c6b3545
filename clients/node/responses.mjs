// Streams one Responses API tool call through toolgate with the official
// OpenAI Node SDK and with the Vercel AI SDK's OpenAI Responses provider,
// and prints, as JSON, what each made of it. Run by
// internal/gateway/node_test.go:
//
//   node responses.mjs <baseURL> <model>
import OpenAI from "openai";
import { createOpenAI } from "@ai-sdk/openai";
import { jsonSchema, streamText, tool } from "ai";

const [baseURL, model] = process.argv.slice(2);
const out = {};
const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

try {
  const client = new OpenAI({ baseURL, apiKey: "k", maxRetries: 0 });
  const stream = client.responses.stream({
    model,
    input: "What is the weather in Paris?",
    tools: [{ type: "function", name: "get_weather", parameters, strict: false }],
  });
  const types = [];
  for await (const ev of stream) types.push(ev.type);
  const final = await stream.finalResponse();
  out.node = {
    status: final.status,
    types,
    calls: final.output.filter((o) => o.type === "function_call").map((o) => ({ call_id: o.call_id, name: o.name, arguments: o.arguments })),
  };
} catch (e) {
  out.node = { error: String(e) };
}

try {
  const provider = createOpenAI({ baseURL, apiKey: "k" });
  const result = streamText({
    model: provider.responses(model),
    prompt: "What is the weather in Paris?",
    tools: { get_weather: tool({ description: "The weather in a city.", inputSchema: jsonSchema(parameters) }) },
  });
  const calls = [];
  const errors = [];
  let finish = null;
  for await (const part of result.fullStream) {
    if (part.type === "tool-call") calls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
    if (part.type === "error") errors.push(String(part.error));
    if (part.type === "finish") finish = part.finishReason;
  }
  out.aisdk = { calls, errors, finish };
} catch (e) {
  out.aisdk = { error: String(e) };
}
console.log(JSON.stringify(out));
