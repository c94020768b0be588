// The official openai npm client against `cabin serve` (tests/serve.sh): a chat completion, a
// streamed one and a tool call on the embedded model. Prints one JSON object of what came back;
// the shell test checks it. usage: node client.mjs BASE_URL
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "not-needed-on-loopback", maxRetries: 0 });
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);
const model = out.models[0];

const whole = await client.chat.completions.create({
  model, messages: [{ role: "user", content: "hello there" }], max_tokens: 32, seed: 1,
});
out.chat = { content: whole.choices[0].message.content, finish: whole.choices[0].finish_reason, usage: whole.usage };

const stream = await client.chat.completions.create({
  model, messages: [{ role: "user", content: "hello there" }], max_tokens: 32, seed: 1, stream: true,
});
let text = "", chunks = 0;
for await (const chunk of stream) {
  chunks++;
  text += chunk.choices[0]?.delta?.content ?? "";
}
out.stream = { content: text, chunks };

const tools = await (await fetch(process.argv[2] + "/cabin/tools")).json();
const call = await client.chat.completions.create({
  model, messages: [{ role: "user", content: "set the temperature to 22 degrees" }], tools, tool_choice: "auto", seed: 1,
});
const msg = call.choices[0].message;
out.tool = {
  finish: call.choices[0].finish_reason,
  name: msg.tool_calls?.[0]?.function?.name,
  arguments: JSON.parse(msg.tool_calls?.[0]?.function?.arguments ?? "null"),
  content: msg.content,
};

try {
  await client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] });
  out.unknown_model = "accepted";
} catch (e) {
  out.unknown_model = e.status;
}
console.log(JSON.stringify(out));
