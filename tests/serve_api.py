#!/usr/bin/python3
"""The API checks of tests/serve.sh against a running `cabin serve` (loopback only).

usage: serve_api.py CHECK PORT [ARG...]; prints "FAIL: ..." per failed check and, last,
"N passed, N failed". Checks:
  embedded PORT          the embedded model: routes, a tool call, streaming = whole, errors
  auth PORT KEY          a server with --api-key KEY
  busy PORT              a server with --queue 0 on a slow model: 503 while a stream runs, and a
                         client that goes away cancels its generation
  slots PORT             a server with --slots 2: two conversations keep their caches, concurrent
                         replies equal sequential ones, commands reach both slots
  side PORT              a server with --slots 2 on a slow model: a short request is answered
                         while a long stream runs
  workbench PORT         cabin workbench --serve: turns, refusals, its state and commands
  workbench-gone PORT    the same on a slow model busy with a :bench: a client that leaves while
                         its turn waits is not a turn
  load PORT N CLIENTS    N requests from CLIENTS threads, streamed and not: none lost or malformed
  structured PORT N      N replies held to a JSON schema, 2 to any object: all parse and validate
  tools PORT             the client's own tools on a model without the car's: calls that validate
  soak PORT N PID [no-rss]  N more requests after 200: the server's RSS and descriptors grow < 5%
  docs PORT FILE         every curl line of FILE's sh blocks, on this port: 200 and JSON or events
"""
import http.client
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what)
    return cond


def request(port, method, path, body=None, headers=None, raw=None):
    """(status, headers, body bytes)"""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = (r.status, dict(r.getheaders()), r.read())
    c.close()
    return out


def chat(port, body, headers=None):
    st, h, b = request(port, "POST", "/v1/chat/completions", body, headers)
    try:
        return st, json.loads(b)
    except ValueError:
        return st, {"unparsed": b.decode(errors="replace")}


def events(raw):
    """The JSON objects of a server-sent event stream, and whether it ended with [DONE]."""
    out, done = [], False
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: "), "an event that is not 'data: ': %r" % block[:80]
        payload = block[6:]
        if payload == "[DONE]":
            done = True
            continue
        assert not done, "an event after [DONE]"
        out.append(json.loads(payload))
    return out, done


def is_error(st, obj, code, words=None):
    e = obj.get("error") if isinstance(obj, dict) else None
    good = st == code and isinstance(e, dict) and isinstance(e.get("message"), str) and e.get("code") == code
    if good and words:
        good = all(w in e["message"] for w in words)
    return good


def embedded(port):
    st, h, b = request(port, "GET", "/health")
    check(st == 200 and json.loads(b)["status"] == "ok", "/health")
    st, h, b = request(port, "GET", "/v1/models")
    models = json.loads(b)
    check(st == 200 and models["object"] == "list" and models["data"][0]["id"] == "cabin-tiny", "/v1/models: %s" % b[:200])
    st, h, b = request(port, "GET", "/v1/cabin/tools")
    tools = json.loads(b)
    names = [t["function"]["name"] for t in tools]
    check(st == 200 and "climate_set" in names and "none" not in names and len(names) >= 20, "/v1/cabin/tools: %s" % names)
    cs = [t for t in tools if t["function"]["name"] == "climate_set"][0]["function"]["parameters"]
    check(cs["properties"]["temp"]["minimum"] == 16 and cs["properties"]["temp"]["maximum"] == 30
          and "zone" in cs["required"], "climate_set's schema: %s" % cs)

    # a turn that acts: a tool call with the car's change, and the counts
    ask = {"model": "cabin-tiny", "messages": [{"role": "user", "content": "set the temperature to 22 degrees"}], "seed": 3}
    st, r = chat(port, ask)
    ok = check(st == 200 and r.get("object") == "chat.completion", "a chat completion: %s %s" % (st, r))
    if ok:
        ch = r["choices"][0]
        calls = ch["message"].get("tool_calls") or []
        check(ch["finish_reason"] == "tool_calls" and len(calls) == 1 and calls[0]["function"]["name"] == "climate_set",
              "a tool call: %s" % ch)
        if calls:
            args = json.loads(calls[0]["function"]["arguments"])
            check(args.get("temp") == 22, "its arguments: %s" % args)
        check("22" in ch["message"].get("cabin", {}).get("vehicle", ""), "the car's change: %s" % ch["message"])
        u = r["usage"]
        check(u["prompt_tokens"] > 0 and u["completion_tokens"] > 0
              and u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], "usage: %s" % u)
        # the same request streamed: the same text and the same call, role first, [DONE] last
        st, h, raw = request(port, "POST", "/v1/chat/completions", dict(ask, stream=True, stream_options={"include_usage": True}))
        try:
            evs, done = events(raw)
        except (AssertionError, ValueError) as e:
            evs, done = [], False
            check(False, "the stream parses: %s" % e)
        check(st == 200 and h.get("Content-Type", "").startswith("text/event-stream") and done, "a stream ends with [DONE]")
        if evs:
            check(evs[0]["choices"][0]["delta"].get("role") == "assistant", "the first event gives the role")
            text = "".join(e["choices"][0]["delta"].get("content") or "" for e in evs if e["choices"])
            check(text == ch["message"]["content"], "streamed text %r == whole %r" % (text, ch["message"]["content"]))
            scalls = [c for e in evs if e["choices"] for c in e["choices"][0]["delta"].get("tool_calls", [])]
            check(len(scalls) == 1 and scalls[0]["function"] == calls[0]["function"], "the streamed tool call: %s" % scalls)
            fin = [e["choices"][0]["finish_reason"] for e in evs if e["choices"] and e["choices"][0]["finish_reason"]]
            check(fin == ["tool_calls"], "one finish_reason, tool_calls: %s" % fin)
            counts = ("prompt_tokens", "completion_tokens", "total_tokens")   # what the cache held may differ
            check(evs[-1]["choices"] == [] and all(evs[-1]["usage"][k] == u[k] for k in counts)
                  and "cached_tokens" in evs[-1]["usage"]["prompt_tokens_details"], "the usage event: %s" % evs[-1])

    # a conversation sent whole, with the assistant's earlier call in it
    conv = {"messages": [{"role": "system", "content": "You are cabin."},
                         {"role": "user", "content": "turn on the ac"},
                         {"role": "assistant", "content": "Turning on the air conditioning.",
                          "tool_calls": [{"id": "c1", "type": "function",
                                          "function": {"name": "climate_ac", "arguments": "{\"state\": \"on\"}"}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "done"},
                         {"role": "user", "content": "and lock the doors"}]}
    st, r = chat(port, conv)
    check(st == 200 and r["usage"]["prompt_tokens"] > 40, "a conversation with a tool call in it: %s %s" % (st, r))
    # tool_choice none: the car is not touched, no call
    st, r = chat(port, {"messages": [{"role": "user", "content": "open the sunroof"}], "tool_choice": "none"})
    check(st == 200 and "tool_calls" not in r["choices"][0]["message"] and r["choices"][0]["finish_reason"] != "tool_calls",
          "tool_choice none: %s" % r)

    # completions: max_tokens is a limit, and a stop sequence cuts the text before it
    st, h, b = request(port, "POST", "/v1/completions", {"prompt": "<act>", "max_tokens": 6, "seed": 1})
    r = json.loads(b)
    check(st == 200 and r["usage"]["completion_tokens"] == 6 and r["choices"][0]["finish_reason"] == "length",
          "completion, max_tokens 6: %s" % r)
    text = r["choices"][0]["text"]
    word = next((w for w in re.findall(r"[a-z]{3,}", text)[1:]), None)
    if check(word is not None, "a word to stop at in %r" % text):
        st, h, b = request(port, "POST", "/v1/completions", {"prompt": "<act>", "max_tokens": 6, "seed": 1, "stop": [word, "zzzz"]})
        r2 = json.loads(b)
        check(st == 200 and r2["choices"][0]["text"] == text[:text.index(word)] and r2["choices"][0]["finish_reason"] == "stop",
              "stop %r: %r from %r" % (word, r2["choices"][0]["text"], text))
        st, h, raw = request(port, "POST", "/v1/completions", {"prompt": "<act>", "max_tokens": 6, "seed": 1, "stop": word, "stream": True})
        evs, done = events(raw)
        check(done and "".join(e["choices"][0]["text"] for e in evs) == text[:text.index(word)], "stop, streamed")
    # the same seed, the same reply
    a = chat(port, {"messages": [{"role": "user", "content": "hello there"}], "temperature": 1.0, "seed": 42})
    b2 = chat(port, {"messages": [{"role": "user", "content": "hello there"}], "temperature": 1.0, "seed": 42})
    check(a == b2 or a[1]["choices"] == b2[1]["choices"], "one seed, one reply")

    # bad input: one JSON error each, and the server goes on
    user = [{"role": "user", "content": "hi"}]
    cases = [
        (request(port, "POST", "/v1/chat/completions", raw=b"{not json"), 400, ["not valid JSON"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": user, "logit_bias": {"5": 1}, "frequency_penalty": 0}), 400, ["logit_bias"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": user, "temperature": "hot"}), 400, ["temperature"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": user, "max_tokens": 0}), 400, ["max_tokens"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": user, "n": 2}), 400, ["n:"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": []}), 400, ["messages"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": user + [{"role": "assistant", "content": "x"}]}), 400, ["last"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": [{"role": "pilot", "content": "x"}]}), 400, ["pilot"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": user, "tools": [{"type": "function", "function": {"name": "launch_rocket"}}]}), 400, ["launch_rocket"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": user, "tool_choice": "required"}), 400, ["tool_choice"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": user, "model": "gpt-4o"}), 404, ["gpt-4o"]),
        (request(port, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "drive home " * 700}]}), 400, ["context holds"]),
        (request(port, "POST", "/v1/completions", {"prompt": "drive home " * 700, "stream": True}), 400, ["context holds"]),
        (request(port, "POST", "/v1/chat/completions", raw=b"a" * (2 << 20)), 413, ["larger than"]),
        (request(port, "GET", "/v1/nothing"), 404, ["/v1/nothing"]),
        (request(port, "GET", "/v1/chat/completions"), 405, ["GET"]),
    ]
    for (st, h, b), code, words in cases:
        try:
            obj = json.loads(b)
        except ValueError:
            obj = None
        check(is_error(st, obj, code, words), "wanted %d naming %s, got %d %s" % (code, words, st, b[:200]))
    st, h, b = request(port, "GET", "/health")
    check(st == 200, "the server goes on after bad input")

    # structured output: refusals first
    for body, words in (({"type": "json_schema", "json_schema": {"schema": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}}}}}, ["minimum"]),
                        ({"type": "json_schema", "json_schema": {"name": "x"}}, ["schema"]),
                        ({"type": "yaml"}, ["response_format.type"])):
        st, r = chat(port, {"messages": user, "response_format": body})
        check(is_error(st, r, 400, words), "response_format %s: %d %s" % (body, st, r))
    st, r = chat(port, {"messages": user, "response_format": {"type": "json_object"}, "tools": [{"type": "function", "function": {"name": "climate_set"}}]})
    check(is_error(st, r, 400, ["together"]), "json and tools together: %s" % r)

    # the command language over HTTP, and the state the panels draw from
    st, h, b = request(port, "POST", "/v1/cabin/command", {"command": "precision q8_0"})
    r = json.loads(b)
    check(st == 200 and r["output"].startswith("precision: q8_0"), "command precision q8_0: %d %s" % (st, b[:200]))
    st, h, b = request(port, "GET", "/v1/cabin/state")
    state = json.loads(b)
    check(st == 200 and "Q8_0" in state["precision"]["bytes_by_type"] and state["precision"]["switches"] >= 1
          and state["kv"]["format"] == "f16" and "climate.ac" in state["vehicle"] and state["model"] == "cabin-tiny",
          "state after the switch: %s" % b[:300])
    st, h, b = request(port, "POST", "/v1/cabin/command", {"command": "say set the temperature to 20 degrees"})
    check(st == 200 and "you: set the temperature to 20 degrees" in json.loads(b)["output"], "command say: %s" % b[:200])
    st, h, b = request(port, "GET", "/v1/cabin/state")
    check(json.loads(b)["vehicle"]["climate.driver_temp"] == "20", "the car after say: %s" % b[-300:])
    for body, code, words in (({"command": "quit"}, 400, ["quit"]), ({"command": "precision q9_9"}, 400, ["q9_9"]),
                              ({"cmd": "stats"}, 400, ["command"])):
        st, h, b = request(port, "POST", "/v1/cabin/command", body)
        check(is_error(st, json.loads(b), code, words), "command %s: %d %s" % (body, st, b[:200]))
    st, h, b = request(port, "GET", "/metrics")
    text = b.decode()
    check(st == 200 and re.search(r'^cabin_requests_total\{kind="chat",code="400"\} \d+$', text, re.M)
          and "cabin_ttft_seconds_bucket{le=\"+Inf\"}" in text and "cabin_completion_tokens_total" in text
          and re.search(r'^cabin_weight_bytes\{type="F32"\} \d+$', text, re.M) and re.search(r'^cabin_kv_bytes\{format="f16",policy="none"\} \d+$', text, re.M)
          and "cabin_governor_on 0" in text and "cabin_decode_joules_per_token" in text, "/metrics: %s" % text[-600:])


CAR_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "seats": {"type": "integer"},
                                              "color": {"enum": ["red", "blue"]}},
              "required": ["name", "seats", "color"], "additionalProperties": False}


def valid_car(v):
    return (isinstance(v, dict) and set(v) == {"name", "seats", "color"} and isinstance(v["name"], str)
            and isinstance(v["seats"], int) and not isinstance(v["seats"], bool) and v["color"] in ("red", "blue"))


def structured(port, n):
    """n replies held to a 3-field schema (temperature 1, a seed each) and 2 to any object: every one
    parses and validates; the mask's cost per token is printed."""
    costs, good = [], 0
    for seed in range(1, n + 1):
        st, r = chat(port, {"messages": [{"role": "user", "content": "describe a car"}], "seed": seed, "temperature": 1.0,
                            "max_tokens": 400, "response_format": {"type": "json_schema",
                                                                   "json_schema": {"name": "car", "schema": CAR_SCHEMA, "strict": True}}})
        text = r.get("choices", [{}])[0].get("message", {}).get("content") if st == 200 else None
        try:
            ok = valid_car(json.loads(text))
        except (TypeError, ValueError):
            ok = False
        good += ok
        check(ok, "seed %d: a reply that does not validate: %s %r" % (seed, st, text if text is not None else r))
        if ok:
            costs.append(r["cabin"]["grammar_ms_per_token"])
    # any object: each reply that ends is one; at temperature 1 an object may also grow until
    # max_tokens cuts it, which the answer must then say ("length")
    whole = 0
    for seed in (1, 2, 3):
        st, r = chat(port, {"messages": [{"role": "user", "content": "hi"}], "seed": seed, "temperature": 1.0, "max_tokens": 400,
                            "response_format": {"type": "json_object"}})
        text = r["choices"][0]["message"]["content"] if st == 200 else None
        finish = r["choices"][0]["finish_reason"] if st == 200 else None
        try:
            ok = isinstance(json.loads(text), dict)
        except (TypeError, ValueError):
            ok = False
        whole += ok
        check(ok or finish == "length", "json_object, seed %d (%s): %r" % (seed, finish, text))
    check(whole >= 2, "json_object: %d of 3 replies a whole object" % whole)
    if costs:
        print("structured output: %d of %d replies valid; mask %.3f ms per token (mean over the replies, max %.3f)"
              % (good, n, sum(costs) / len(costs), max(costs)))


WEATHER_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "unit": {"enum": ["c", "f"]}},
        "required": ["city", "unit"]}}},
    {"type": "function", "function": {"name": "play", "parameters": {
        "type": "object", "properties": {"song": {"type": "string"}}, "required": ["song"]}}},
]


def client_tools(port):
    """A model without the car's tools, the client's own: required and a named function give a
    call whose arguments hold to that function's schema, streamed or not; auto is refused."""
    ask = {"messages": [{"role": "user", "content": "weather in Paris?"}], "tools": WEATHER_TOOLS, "max_tokens": 120, "temperature": 1.0}
    for seed in (1, 2, 3):
        st, r = chat(port, dict(ask, tool_choice="required", seed=seed))
        calls = r.get("choices", [{}])[0].get("message", {}).get("tool_calls") if st == 200 else None
        ok = bool(calls) and r["choices"][0]["finish_reason"] == "tool_calls"
        if ok:
            fn = calls[0]["function"]
            args = json.loads(fn["arguments"])
            ok = (fn["name"] == "get_weather" and set(args) == {"city", "unit"} and isinstance(args["city"], str)
                  and len(args["city"]) <= 20 and args["unit"] in ("c", "f")) or (fn["name"] == "play" and set(args) == {"song"}
                                                                               and isinstance(args["song"], str))
        check(ok, "tool_choice required, seed %d: %s %s" % (seed, st, r))
    st, r = chat(port, dict(ask, tool_choice={"type": "function", "function": {"name": "play"}}, seed=4))
    calls = r.get("choices", [{}])[0].get("message", {}).get("tool_calls") if st == 200 else None
    check(calls and calls[0]["function"]["name"] == "play" and "song" in json.loads(calls[0]["function"]["arguments"]),
          "a named function: %s" % r)
    st, h, raw = request(port, "POST", "/v1/chat/completions", dict(ask, tool_choice="required", seed=5, stream=True))
    evs, done = events(raw)
    scalls = [c for e in evs if e["choices"] for c in e["choices"][0]["delta"].get("tool_calls", [])]
    check(done and len(scalls) == 1 and scalls[0]["function"]["name"] in ("get_weather", "play"), "a streamed call: %s" % scalls)
    st, r = chat(port, dict(ask, tool_choice="auto"))
    check(is_error(st, r, 400, ["auto"]), "tool_choice auto without a call format: %s" % r)
    st, r = chat(port, dict(ask, tool_choice={"type": "function", "function": {"name": "fly"}}))
    check(is_error(st, r, 400, ["fly"]), "a named function that is not among the tools: %s" % r)
    st, r = chat(port, dict(ask, tool_choice="none", max_tokens=8))
    check(st == 200 and "tool_calls" not in r["choices"][0]["message"], "tool_choice none: text")


def valid_weather_call(fn):
    try:
        args = json.loads(fn["arguments"])
    except (ValueError, KeyError, TypeError):
        return False
    return (fn["name"] == "get_weather" and set(args) == {"city", "unit"} and isinstance(args["city"], str)
            and len(args["city"]) <= 20 and args["unit"] in ("c", "f")) or (fn["name"] == "play" and set(args) == {"song"}
                                                                         and isinstance(args["song"], str))


def tagged_tools(port, open_id):
    """A model that writes its calls in tags of its own (<tool_call>, token open_id): auto lets it
    write text or call; a call (made likely with logit_bias, or asked for) comes back as a tool
    call that validates, whole and streamed; a conversation with a call and its result goes on."""
    ask = {"messages": [{"role": "user", "content": "weather in Paris?"}], "tools": WEATHER_TOOLS, "max_tokens": 60, "temperature": 1.0}
    st, r = chat(port, dict(ask, tool_choice="auto", seed=1, max_tokens=8))
    msg = r.get("choices", [{}])[0].get("message", {}) if st == 200 else {}
    check(st == 200 and ("tool_calls" not in msg or valid_weather_call(msg["tool_calls"][0]["function"])),
          "tool_choice auto: text or a valid call: %s %s" % (st, r))
    for seed in (1, 2, 3):
        st, r = chat(port, dict(ask, tool_choice="auto", seed=seed, logit_bias={str(open_id): 100}))
        calls = r.get("choices", [{}])[0].get("message", {}).get("tool_calls") if st == 200 else None
        check(bool(calls) and len(calls) == 1 and r["choices"][0]["finish_reason"] == "tool_calls"
              and valid_weather_call(calls[0]["function"]), "auto, the tag biased up, seed %d: %s %s" % (seed, st, r))
    st, r = chat(port, dict(ask, tool_choice="required", seed=4))
    calls = r.get("choices", [{}])[0].get("message", {}).get("tool_calls") if st == 200 else None
    check(bool(calls) and valid_weather_call(calls[0]["function"]), "required: a call in tags: %s %s" % (st, r))
    st, h, raw = request(port, "POST", "/v1/chat/completions",
                         dict(ask, tool_choice="auto", seed=5, stream=True, logit_bias={str(open_id): 100}))
    evs, done = events(raw)
    scalls = [c for e in evs if e["choices"] for c in e["choices"][0]["delta"].get("tool_calls", [])]
    ends = [e["choices"][0]["finish_reason"] for e in evs if e["choices"] and e["choices"][0].get("finish_reason")]
    check(done and len(scalls) == 1 and valid_weather_call(scalls[0]["function"]) and ends == ["tool_calls"],
          "a streamed call in tags: %s %s" % (scalls, ends))
    # the call and its result sent back: the model reads both (the prompt grows by them)
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}}
    turn = [{"role": "user", "content": "weather in Paris?"}, {"role": "assistant", "content": None, "tool_calls": [call]}]
    st1, r1 = chat(port, dict(ask, messages=turn + [{"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"}], max_tokens=4))
    st2, r2 = chat(port, dict(ask, messages=turn + [{"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny, a light wind from the west"}], max_tokens=4))
    check(st1 == 200 and st2 == 200 and r2["usage"]["prompt_tokens"] > r1["usage"]["prompt_tokens"] > 0,
          "a tool's result is read: %s %s" % (r1.get("usage"), r2.get("usage")))
    st, r = chat(port, dict(ask, logit_bias={"999999999": 1}))
    check(is_error(st, r, 400, ["logit_bias", "vocabulary"]), "a token id past the vocabulary: %s" % r)
    st, r = chat(port, dict(ask, logit_bias={"12": 101}))
    check(is_error(st, r, 400, ["logit_bias", "-100 to 100"]), "a bias out of range: %s" % r)
    st, r = chat(port, dict(ask, logit_bias={"twelve": 1}))
    check(is_error(st, r, 400, ["twelve"]), "a key that is no token id: %s" % r)


def auth(port, key):
    user = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    st, r = chat(port, user)
    check(is_error(st, r, 401), "no key: 401 (%d %s)" % (st, r))
    st, r = chat(port, user, {"Authorization": "Bearer not-" + key})
    check(is_error(st, r, 401), "a wrong key: 401")
    st, r = chat(port, user, {"Authorization": "Bearer " + key})
    check(st == 200, "the key: 200 (%d %s)" % (st, r))
    st, h, b = request(port, "GET", "/v1/models")
    check(st == 401, "/v1/models needs the key too")
    st, h, b = request(port, "GET", "/health")
    check(st == 200, "/health does not")


def prompt_cache(port, on, key=None):
    """A conversation sent again one turn longer: with the prompt cache (on) its earlier turn is
    taken from the cache (usage.prompt_tokens_details.cached_tokens), and the reply is the one the
    same request gets after an unrelated one emptied the cache of it; without (off), nothing is."""
    h = {"Authorization": "Bearer " + key} if key else None
    first = [{"role": "user", "content": "turn on the ac"}]
    st, r1 = chat(port, {"messages": first, "seed": 5}, h)
    if not check(st == 200, "the first turn: %s %s" % (st, r1)):
        return
    m = r1["choices"][0]["message"]
    said = {"role": "assistant", "content": m.get("content") or ""}
    if m.get("tool_calls"):
        said["tool_calls"] = m["tool_calls"]
    longer = {"messages": first + [said, {"role": "user", "content": "and lock the doors"}], "seed": 5}
    st, r2 = chat(port, longer, h)
    cached = r2.get("usage", {}).get("prompt_tokens_details", {}).get("cached_tokens", -1)
    p1 = r1["usage"]["prompt_tokens"]
    if on:
        check(st == 200 and cached > p1 // 2 and cached < r2["usage"]["prompt_tokens"],
              "the second turn takes the first from the cache: %d of %d (the first turn's prompt %d)" % (cached, r2["usage"]["prompt_tokens"], p1))
    else:
        check(st == 200 and cached == 0, "--no-prompt-cache: nothing taken (%d)" % cached)
    chat(port, {"messages": [{"role": "user", "content": "what time is it"}], "max_tokens": 4}, h)
    st, r3 = chat(port, longer, h)
    cached3 = r3.get("usage", {}).get("prompt_tokens_details", {}).get("cached_tokens", -1)
    check(st == 200 and (cached3 < cached or not on), "after another conversation less is cached: %d" % cached3)
    def said(r):   # the reply without its call ids
        m = r["choices"][0]["message"]
        return m.get("content"), [c["function"] for c in m.get("tool_calls", [])]
    check(said(r3) == said(r2), "the same reply from the cache and without it: %s | %s" % (said(r2), said(r3)))
    st, hh, b = request(port, "GET", "/metrics", headers=h)
    line = [l for l in b.decode().split("\n") if l.startswith("cabin_prompt_tokens_cached_total ")]
    n = int(line[0].split()[1]) if line else -1
    check(n > 0 if on else n == 0, "cabin_prompt_tokens_cached_total %d" % n)


def workbench(port):
    """cabin workbench --serve on the embedded model: a request is a turn of the workbench's
    conversation, whole or streamed, with the car's action as a tool call; what a turn of the
    workbench cannot honour is refused by name."""
    ask = {"messages": [{"role": "user", "content": "set the temperature to 22 degrees"}]}
    st, r = chat(port, ask)
    if check(st == 200 and r.get("object") == "chat.completion", "a turn over HTTP: %s %s" % (st, r)):
        m = r["choices"][0]["message"]
        calls = m.get("tool_calls") or []
        check(len(calls) == 1 and calls[0]["function"]["name"] == "climate_set"
              and json.loads(calls[0]["function"]["arguments"]).get("temp") == 22
              and r["choices"][0]["finish_reason"] == "tool_calls", "its tool call: %s" % m)
        check("22" in m.get("cabin", {}).get("vehicle", "") and "<act>" not in (m.get("content") or "x<act>"),
              "the car's change, and the sentence without the action line: %s" % m)
    st, h, raw = request(port, "POST", "/v1/chat/completions",
                         {"messages": [{"role": "user", "content": "play the next song"}], "stream": True,
                          "stream_options": {"include_usage": True}})
    try:
        evs, done = events(raw)
    except (AssertionError, ValueError):
        evs, done = [], False
    check(st == 200 and done and evs and evs[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0,
          "a streamed turn, after the conversation before it: %s" % (evs[-1] if evs else raw[:300]))
    st, r = chat(port, {"messages": [{"role": "user", "content": "what is the weather"}], "max_tokens": 3})
    check(st == 200 and r["usage"]["completion_tokens"] == 3 and r["choices"][0]["finish_reason"] == "length",
          "max_tokens: %s" % r.get("usage"))
    for body, word in (({"messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}, "temperature"),
                       ({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_object"}}, "response_format"),
                       ({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "none"}, "tool_choice")):
        st, r = chat(port, body)
        check(is_error(st, r, 400, [word]), "%s refused by name: %d %s" % (word, st, r))
    st, h, b = request(port, "POST", "/v1/completions", {"prompt": "hi"})
    check(st == 400 and b"chat turns" in b, "completions refused: %d %s" % (st, b[:200]))
    # the workbench's own state and commands, as cabin serve gives its own
    st, h, b = request(port, "GET", "/v1/cabin/state")
    state = json.loads(b) if st == 200 else {}
    check(state.get("model") == "cabin-tiny" and state.get("vehicle", {}).get("climate.driver_temp") == "22"
          and state.get("turns", 0) >= 3 and state.get("last_turn", {}).get("generated_tokens", 0) > 0,
          "the state the panels draw from: %d %s" % (st, b[:300]))
    st, h, b = request(port, "POST", "/v1/cabin/command", {"command": "note hello from an app"})
    out = json.loads(b).get("output", "") if st == 200 else ""
    check(st == 200 and "hello from an app" in out, "a command's output: %d %s" % (st, b[:200]))
    st, h, b = request(port, "POST", "/v1/cabin/command", {"command": "fly away"})
    check(is_error(st, json.loads(b), 400, ["fly"]), "an unknown command: %d %s" % (st, b[:200]))


def workbench_gone(port):
    """cabin workbench --serve while the workbench's worker is busy (a :bench typed before): a
    client that leaves while its turn waits behind it is dropped unsaid; the next one is a turn."""
    turns0 = json.loads(request(port, "GET", "/v1/cabin/state")[2])["turns"]
    s = socket.create_connection(("127.0.0.1", port))
    body = json.dumps({"messages": [{"role": "user", "content": "hello there"}], "max_tokens": 4}).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    time.sleep(0.3)
    busy = json.loads(request(port, "GET", "/health")[2])["busy"]
    s.close()
    deadline = time.time() + 60
    while time.time() < deadline and json.loads(request(port, "GET", "/health")[2])["busy"]:
        time.sleep(0.05)
    turns1 = json.loads(request(port, "GET", "/v1/cabin/state")[2])["turns"]
    check(busy == 1 and turns1 == turns0, "a request whose client left while it waited: not a turn (%d -> %d turns; busy %d)"
          % (turns0, turns1, busy))
    st, r = chat(port, {"messages": [{"role": "user", "content": "hello again"}], "max_tokens": 2})
    turns2 = json.loads(request(port, "GET", "/v1/cabin/state")[2])["turns"]
    check(st == 200 and turns2 == turns1 + 1, "the next request is a turn: %d, %d -> %d" % (st, turns1, turns2))


def long_stream(port):
    """A 1,500-token completion streamed on a raw socket, returned once its first events came
    (closing the socket is the client going away)."""
    s = socket.create_connection(("127.0.0.1", port))
    body = json.dumps({"prompt": "one two three", "max_tokens": 1500, "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    got = b""
    while got.count(b"data: ") < 3:
        piece = s.recv(4096)
        if not piece:
            break
        got += piece
    check(b"200 OK" in got and got.count(b"data: ") >= 3, "a stream began: %r" % got[:200])
    return s


def busy(port):
    # a long stream holds the slot; with --queue 0 the next request is refused with Retry-After
    s = long_stream(port)
    st, h, b = request(port, "POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2})
    check(st == 503 and h.get("Retry-After") and is_error(st, json.loads(b), 503), "busy: 503 with Retry-After (%d %s)" % (st, b[:120]))
    s.close()   # the client goes away: its generation stops at the next token
    deadline = time.time() + 20
    cancelled = None
    while time.time() < deadline:
        st, h, b = request(port, "GET", "/metrics")
        m = re.search(r"^cabin_requests_cancelled_total (\d+)$", b.decode(), re.M)
        cancelled = int(m.group(1)) if m else None
        st, h, b = request(port, "GET", "/health")
        if cancelled and not json.loads(b)["busy"]:
            break
        time.sleep(0.05)
    check(cancelled == 1, "the stream that lost its client was cancelled (%s)" % cancelled)
    st, h, b = request(port, "POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2})
    check(st == 200, "the slot is free again (%d)" % st)
    # the same for a whole answer: its client leaves while it runs, and it stops
    s = socket.create_connection(("127.0.0.1", port))
    body = json.dumps({"prompt": "one two three", "max_tokens": 1500}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    deadline = time.time() + 20
    while time.time() < deadline and not json.loads(request(port, "GET", "/health")[2])["busy"]:
        time.sleep(0.02)
    s.close()
    t_closed = time.time()
    deadline = t_closed + 20
    while time.time() < deadline:
        st, h, b = request(port, "GET", "/metrics")
        m = re.search(r"^cabin_requests_cancelled_total (\d+)$", b.decode(), re.M)
        cancelled = int(m.group(1)) if m else None
        st, h, b = request(port, "GET", "/health")
        if cancelled == 2 and not json.loads(b)["busy"]:
            break
        time.sleep(0.05)
    check(cancelled == 2, "the whole answer that lost its client was cancelled (%s, %.1f s after it left)" % (cancelled, time.time() - t_closed))
    st, h, b = request(port, "POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2})
    check(st == 200, "the slot is free again after the whole answer (%d)" % st)


def slots(port):
    """--slots 2: each conversation goes back to the slot that holds it, so two clients taking
    turns both keep their prompt cache (one slot would lose it to the other); replies made side by
    side are those made one after the other; a KV change by command reaches both slots."""
    st, h, b = request(port, "GET", "/health")
    check(st == 200 and json.loads(b)["slots"] == 2, "health says 2 slots: %s" % b[:120])
    convs = [[{"role": "user", "content": "turn on the ac"}], [{"role": "user", "content": "play some jazz"}]]
    firsts = []
    for c in convs:
        st, r = chat(port, {"messages": c})
        check(st == 200, "a first turn: %s %s" % (st, r))
        m = r["choices"][0]["message"]
        said = {"role": "assistant", "content": m.get("content") or ""}
        if m.get("tool_calls"):
            said["tool_calls"] = m["tool_calls"]
        c += [said, {"role": "user", "content": "and lock the doors"}]
        firsts.append(r["usage"]["prompt_tokens"])

    def reply(r):
        m = r["choices"][0]["message"]
        return m.get("content"), [c["function"] for c in m.get("tool_calls", [])]
    seq = []
    for i, c in enumerate(convs):
        st, r = chat(port, {"messages": c})
        cached = r.get("usage", {}).get("prompt_tokens_details", {}).get("cached_tokens", -1)
        check(st == 200 and cached >= firsts[i] - 1, "conversation %d goes back to its slot: %d tokens cached (its first turn %d)"
              % (i, cached, firsts[i]))
        seq.append(reply(r) if st == 200 else None)
    side = [None, None]

    def one(i):
        st, r = chat(port, {"messages": convs[i]})
        side[i] = reply(r) if st == 200 else st
    ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(side == seq, "side by side the replies are those one after the other: %s | %s" % (side, seq))
    st, h, b = request(port, "GET", "/metrics")
    check(re.search(r"^cabin_slots 2$", b.decode(), re.M) is not None, "cabin_slots 2 in /metrics")
    check(re.search(r"^cabin_decode_steps_shared_total \d+$", b.decode(), re.M) is not None,
          "cabin_decode_steps_shared_total in /metrics")
    st, h, b = request(port, "POST", "/v1/cabin/command", {"command": "governor tps>=10"})
    check(st == 400 and is_error(st, json.loads(b), 400, ["slots"]), "the governor is refused with 2 slots: %d %s" % (st, b[:160]))
    st, h, b = request(port, "POST", "/v1/cabin/command", {"command": "kv q8"})
    check(st == 200, "kv q8: %d %s" % (st, b[:160]))
    for i, c in enumerate(convs):   # a q8 cache is not taken again: in both slots
        st, r = chat(port, {"messages": c})
        cached = r.get("usage", {}).get("prompt_tokens_details", {}).get("cached_tokens", -1)
        check(st == 200 and cached == 0, "conversation %d after kv q8: %d tokens cached" % (i, cached))
    st, h, b = request(port, "POST", "/v1/cabin/command", {"command": "kv f16"})
    check(st == 200, "kv f16: %d %s" % (st, b[:160]))


def side_by_side(port):
    """--slots 2 on a slow model: a short request is answered while a long stream still runs."""
    s = long_stream(port)
    t0 = time.time()
    st, h, b = request(port, "POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2})
    took = time.time() - t0
    st_h, h_h, b_h = request(port, "GET", "/health")
    busy = json.loads(b_h)["busy"]
    check(st == 200 and busy == 1, "a short request answered in %.2f s while the stream runs (%d; slots busy %d)" % (took, st, busy))
    s.close()
    deadline = time.time() + 20
    while time.time() < deadline and json.loads(request(port, "GET", "/health")[2])["busy"]:
        time.sleep(0.05)
    check(json.loads(request(port, "GET", "/health")[2])["busy"] == 0, "the stream that lost its client ended")


def load(port, n, clients, quiet=False):
    lat, errors = [], []
    lock = threading.Lock()
    todo = list(range(n))

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            stream = i % 2 == 0
            body = {"messages": [{"role": "user", "content": ["turn up the volume", "call mom", "hello", "go home"][i % 4]}],
                    "max_tokens": 24, "stream": stream}
            t0 = time.time()
            try:
                st, h, raw = request(port, "POST", "/v1/chat/completions", body)
                if st != 200:
                    raise ValueError("status %d %s" % (st, raw[:100]))
                if stream:
                    evs, done = events(raw)
                    if not done or not evs:
                        raise ValueError("a stream without [DONE]")
                else:
                    r = json.loads(raw)
                    if r["choices"][0]["finish_reason"] not in ("stop", "length", "tool_calls"):
                        raise ValueError("finish_reason %r" % r["choices"][0]["finish_reason"])
                with lock:
                    lat.append(time.time() - t0)
            except Exception as e:   # lost or malformed
                with lock:
                    errors.append("%d: %s" % (i, e))

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors and len(lat) == n, "%d requests, %d answered, errors: %s" % (n, len(lat), errors[:3]))
    lat.sort()
    if lat and not quiet:
        print("load: %d requests from %d clients: 0 lost; latency p50 %.0f ms, p99 %.0f ms"
              % (n, clients, 1e3 * lat[len(lat) // 2], 1e3 * lat[min(len(lat) - 1, int(len(lat) * 0.99))]))


def proc_figures(pid):
    """(resident KiB, open file descriptors) of process pid"""
    rss = 0
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return rss, len(os.listdir("/proc/%d/fd" % pid))


def soak(port, n, pid, rss_too):
    # a warm-up first (the allocator's and the threads' high-water marks), then n requests: the
    # server's resident memory and open descriptors must stay flat (grow under 5%)
    # descriptors are counted at rest: the last connections' threads close their sockets a moment
    # after the client has its answer, so the count is read again until it settles (up to 3 s)
    def at_rest():
        last = None
        for _ in range(60):
            now = proc_figures(pid)
            if last and now[1] == last[1]:
                return now
            last = now
            time.sleep(0.05)
        return last
    load(port, 200, 8, quiet=True)
    rss0, fd0 = at_rest()
    load(port, n, 8, quiet=True)
    rss1, fd1 = at_rest()
    deadline = time.time() + 3
    while fd1 > fd0 and time.time() < deadline:
        time.sleep(0.1)
        rss1, fd1 = proc_figures(pid)
    print("soak: %d requests after 200: RSS %d -> %d KiB (%+.1f%%), open descriptors %d -> %d"
          % (n, rss0, rss1, 100.0 * (rss1 - rss0) / rss0, fd0, fd1))
    if rss_too:
        check(rss1 <= rss0 * 1.05, "RSS grew by more than 5%%: %d -> %d KiB" % (rss0, rss1))
    check(fd1 <= fd0 * 1.05, "open descriptors grew by more than 5%%: %d -> %d" % (fd0, fd1))


def docs(port, path):
    text = open(path).read()
    cmds = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = block.replace("\\\n", " ")
        cmds += [l.strip() for l in joined.splitlines() if l.strip().startswith("curl ")]
    check(len(cmds) >= 4, "curl examples in %s: %d" % (path, len(cmds)))
    for cmd in cmds:
        argv = shlex.split(cmd.replace("127.0.0.1:8080", "127.0.0.1:%d" % port))
        out = subprocess.run(argv + ["-s", "-w", "\n%{http_code}"], capture_output=True, timeout=60)
        body, _, code = out.stdout.decode().rpartition("\n")
        good = out.returncode == 0 and code == "200"
        if good and "data: " in body:
            evs, done = events(body.encode())
            good = done
        elif good and not body.startswith("# HELP"):
            json.loads(body)
        check(good, "%s: exit %d, status %s: %s" % (cmd, out.returncode, code, body[:160]))


def main():
    what, port = sys.argv[1], int(sys.argv[2])
    if what == "embedded":
        embedded(port)
    elif what == "auth":
        auth(port, sys.argv[3])
    elif what == "busy":
        busy(port)
    elif what == "slots":
        slots(port)
    elif what == "side":
        side_by_side(port)
    elif what == "workbench":
        workbench(port)
    elif what == "workbench-gone":
        workbench_gone(port)
    elif what == "cache":
        prompt_cache(port, sys.argv[3] == "on", sys.argv[4] if len(sys.argv) > 4 else None)
    elif what == "load":
        load(port, int(sys.argv[3]), int(sys.argv[4]))
    elif what == "structured":
        structured(port, int(sys.argv[3]))
    elif what == "tools":
        client_tools(port)
    elif what == "tagged-tools":
        tagged_tools(port, int(sys.argv[3]))
    elif what == "soak":
        soak(port, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:] != ["no-rss"])
    elif what == "docs":
        docs(port, sys.argv[3])
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
