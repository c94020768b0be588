// Chat templates: each family recognised from a faithful excerpt of its own Jinja source
// (tokenizer_config.json's chat_template, as GGUF files carry it), what each renders for a system
// text and two user turns, the file's own default system text, the fallback to plain with one
// notice, and a Gemma conversation through the session checked token by token.
#include "test.h"
#include "engine/chat_template.h"
#include "engine/gguf.h"
#include "engine/modelgen.h"
#include "engine/session.h"
#include "engine/tokenizer.h"

#include <stdbool.h>
#include <unistd.h>

// DeepSeek's fullwidth bars (U+FF5C) and SentencePiece space (U+2581), as in their special tokens
#define FW_BAR "\xEF\xBD\x9C"
#define SP_SPACE "\xE2\x96\x81"
#define DS_USER "<" FW_BAR "User" FW_BAR ">"
#define DS_ASSISTANT "<" FW_BAR "Assistant" FW_BAR ">"
#define DS_EOS "<" FW_BAR "end" SP_SPACE "of" SP_SPACE "sentence" FW_BAR ">"

// ---- the sources (Jinja's "\n" escapes written as the two characters, as the files hold them) ----

// google/gemma-3-*-it (the image branch left out)
static const char GEMMA3[] =
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\\n'}}\n"
    "{%- endif -%}\n";

// google/gemma-2-*-it (and gemma-1.1): no system role
static const char GEMMA2[] =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}"
    "{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + "
    "'<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}";

// meta-llama/Meta-Llama-3-8B-Instruct
static const char LLAMA3[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

// meta-llama/Llama-3.1-8B-Instruct (3.2 and 3.3 alike; the tool branches left out)
static const char LLAMA31[] =
    "{{- bos_token }}\n"
    "{%- if not date_string is defined %}\n"
    "    {%- set date_string = \"26 Jul 2024\" %}\n"
    "{%- endif %}\n"
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {%- set system_message = messages[0]['content']|trim %}\n"
    "    {%- set messages = messages[1:] %}\n"
    "{%- else %}\n"
    "    {%- set system_message = \"\" %}\n"
    "{%- endif %}\n"
    "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n"
    "{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n"
    "{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n"
    "{{- system_message }}\n"
    "{{- \"<|eot_id|>\" }}\n"
    "{%- for message in messages %}\n"
    "    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    "{%- endif %}\n";

// Qwen/Qwen2.5-*-Instruct: the tools branch first, then the default system text
static const char QWEN25[] =
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n";

// Qwen/Qwen3-*: chatml with no default system text (the tools and thinking branches left out)
static const char QWEN3[] =
    "{%- if messages[0].role == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}";

// HuggingFaceTB/SmolLM2-*-Instruct: real newlines inside the string literals
static const char SMOLLM2[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
    "' + message['content'] + '<|im_end|>' + '\n"
    "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
    "' }}{% endif %}";

// microsoft/Phi-3.5-mini-instruct
static const char PHI35[] =
    "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\n"
    "' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + "
    "'<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}";

// the embedded model's (tools/train/export_gguf.py)
static const char CABIN_TINY[] =
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '<|user|>\n' + message['content'] + '<|end|>\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\n' + message['content'] + '<|end|>\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}";

// microsoft/phi-4
static const char PHI4[] =
    "{% for message in messages %}{% if (message['role'] == 'system') %}{{'<|im_start|>system<|im_sep|>' + "
    "message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'user') %}{{'<|im_start|>user<|im_sep|>' + "
    "message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'assistant') %}{{'<|im_start|>assistant<|im_sep|>' + "
    "message['content'] + '<|im_end|>'}}{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}";

// HuggingFaceH4/zephyr-7b-beta (TinyLlama-1.1B-Chat alike)
static const char ZEPHYR[] =
    "{% for message in messages %}\n"
    "{% if message['role'] == 'user' %}\n"
    "{{ '<|user|>\\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'system' %}\n"
    "{{ '<|system|>\\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'assistant' %}\n"
    "{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n"
    "{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n"
    "{{ '<|assistant|>' }}\n"
    "{% endif %}\n"
    "{% endfor %}";

// meta-llama/Llama-2-7b-chat-hf
static const char LLAMA2[] =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}{% set content = "
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = "
    "message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + "
    "' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}"
    "{% endfor %}";

// mistralai/Mistral-7B-Instruct-v0.1 and v0.2, Mixtral-8x7B-Instruct-v0.1, as first published
static const char MISTRAL[] =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}"
    "{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

// mistral-common tokenizer v1 (the same models' updated template)
static const char MISTRAL_V1[] =
    "{{- bos_token }}\n"
    "{%- for message in loop_messages %}\n"
    "    {%- if message['role'] == 'user' %}\n"
    "        {%- if loop.first and system_message is defined %}\n"
    "            {{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}\n"
    "        {%- else %}\n"
    "            {{- ' [INST] ' + message['content'] + ' [/INST]' }}\n"
    "        {%- endif %}\n"
    "    {%- elif message['role'] == 'assistant' %}\n"
    "        {{- ' ' + message['content'] + eos_token}}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n";

// mistralai/Mistral-7B-Instruct-v0.3 (v3: Mixtral-8x22B, Mistral-Large-2407 alike)
static const char MISTRAL_V3[] =
    "{{- bos_token }}\n"
    "{%- for message in loop_messages %}\n"
    "    {%- if message[\"role\"] == \"user\" %}\n"
    "        {%- if tools is not none and (message == user_messages[-1]) %}\n"
    "            {{- \"[AVAILABLE_TOOLS] [\" }}\n"
    "        {%- endif %}\n"
    "        {%- if loop.last and system_message is defined %}\n"
    "            {{- \"[INST] \" + system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}\n"
    "        {%- else %}\n"
    "            {{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}\n"
    "        {%- endif %}\n"
    "    {%- elif message[\"role\"] == \"assistant\" %}\n"
    "        {{- \" \" + message[\"content\"]|trim + eos_token}}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n";

// mistralai/Mistral-Nemo-Instruct-2407 (v3-tekken)
static const char MISTRAL_NEMO[] =
    "{{- bos_token }}\n"
    "{%- for message in loop_messages %}\n"
    "    {%- if message[\"role\"] == \"user\" %}\n"
    "        {%- if loop.last and system_message is defined %}\n"
    "            {{- \"[INST]\" + system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}\n"
    "        {%- else %}\n"
    "            {{- \"[INST]\" + message[\"content\"] + \"[/INST]\" }}\n"
    "        {%- endif %}\n"
    "    {%- elif message[\"role\"] == \"assistant\" %}\n"
    "        {{- message[\"content\"] + eos_token}}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n";

// mistralai/Mistral-Large-Instruct-2411 (v7)
static const char MISTRAL_V7[] =
    "{{- bos_token }}{%- for message in messages %}{%- if message['role'] == 'user' %}{{- '[INST] ' + "
    "message['content'] + '[/INST]' }}{%- elif message['role'] == 'system' %}{{- '[SYSTEM_PROMPT] ' + "
    "message['content'] + '[/SYSTEM_PROMPT]' }}{%- elif message['role'] == 'assistant' %}{{- ' ' + "
    "message['content'] + eos_token }}{%- endif %}{%- endfor %}";

// mistralai/Mistral-Small-24B-Instruct-2501 (v7-tekken; its default system text shortened)
static const char MISTRAL_SMALL3[] =
    "{%- set today = strftime_now(\"%Y-%m-%d\") %}\n"
    "{%- set default_system_message = \"You are Mistral Small 3, a Large Language Model (LLM) created by Mistral AI.\" %}\n"
    "{{- bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {%- set system_message = messages[0]['content'] %}\n"
    "    {%- set loop_messages = messages[1:] %}\n"
    "{%- else %}\n"
    "    {%- set system_message = default_system_message %}\n"
    "    {%- set loop_messages = messages %}\n"
    "{%- endif %}\n"
    "{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}\n"
    "{%- for message in loop_messages %}\n"
    "    {%- if message['role'] == 'user' %}\n"
    "        {{- '[INST]' + message['content'] + '[/INST]' }}\n"
    "    {%- elif message['role'] == 'assistant' %}\n"
    "        {{- message['content'] + eos_token }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}";

// deepseek-ai/DeepSeek-V3 (V2.5 alike; the tool branches left out)
static const char DEEPSEEK_V3[] =
    "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = "
    "namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', is_first_sp=true) %}"
    "{%- for message in messages %}{%- if message['role'] == 'system' %}{% set ns.system_prompt = message['content'] %}"
    "{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}"
    "{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'" DS_USER "' + message['content']}}{%- endif %}"
    "{%- if message['role'] == 'assistant' and 'tool_calls' not in message %}{{'" DS_ASSISTANT "' + message['content'] + '"
    DS_EOS "'}}{%- endif %}{%- endfor -%}{% if add_generation_prompt and not ns.is_tool %}{{'" DS_ASSISTANT "'}}{% endif %}";

// deepseek-ai/DeepSeek-R1-Distill-Qwen-* and -Llama-* (as updated: the reply opens with <think>)
static const char DEEPSEEK_R1[] =
    "{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='') %}"
    "{%- for message in messages %}{%- if message['role'] == 'system' %}{% set ns.system_prompt = message['content'] %}"
    "{%- endif %}{%- endfor %}{{bos_token}}{{ns.system_prompt}}{%- for message in messages %}"
    "{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'" DS_USER "' + message['content']}}{%- endif %}"
    "{%- if message['role'] == 'assistant' and message['content'] is not none %}{% set content = message['content'] %}"
    "{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'" DS_ASSISTANT
    "' + content + '" DS_EOS "'}}{%- endif %}{%- endfor -%}{% if add_generation_prompt and not ns.is_tool %}{{'"
    DS_ASSISTANT "<think>\\n'}}{% endif %}";

// deepseek-ai/deepseek-llm-7b-chat (DeepSeek-V2-Lite-Chat, DeepSeek-Coder-V2-Lite-Instruct alike)
static const char DEEPSEEK_LLM[] =
    "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{{ bos_token }}"
    "{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\\n\\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + message['content'] + eos_token }}"
    "{% elif message['role'] == 'system' %}{{ message['content'] + '\\n\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}";

// deepseek-ai/deepseek-coder-6.7b-instruct (its default system text shortened)
static const char DEEPSEEK_CODER[] =
    "{{bos_token}}{%- if not ns.found -%}\n"
    "{{'You are an AI programming assistant, utilizing the Deepseek Coder model.\\n'}}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if message['role'] == 'system' %}\n"
    "{{ message['content'] }}\n"
    "    {%- else %}\n"
    "        {%- if message['role'] == 'user' %}\n"
    "{{'### Instruction:\\n' + message['content'] + '\\n'}}\n"
    "        {%- else %}\n"
    "{{'### Response:\\n' + message['content'] + '\\n<|EOT|>\\n'}}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{% if add_generation_prompt %}\n"
    "{{'### Response:'}}\n"
    "{% endif %}";

// Not recognised: lmsys/vicuna (USER:/ASSISTANT:) and CohereForAI/c4ai-command-r
static const char VICUNA[] =
    "{% for message in messages %}{% if message['role'] == 'user' %}{{ 'USER: ' + message['content'] + '\\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ 'ASSISTANT: ' + message['content'] + eos_token + '\\n' }}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}";
static const char COMMAND_R[] =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + message['content'] | trim + '<|END_OF_TURN_TOKEN|>' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}";

static void test_detect(void) {
    static const struct { const char *what, *src, *want; } cases[] = {
        { "Gemma 3", GEMMA3, "gemma" },
        { "Gemma 2", GEMMA2, "gemma" },
        { "Llama 3", LLAMA3, "llama-3" },
        { "Llama 3.1", LLAMA31, "llama-3.1" },
        { "Qwen2.5", QWEN25, "chatml" },
        { "Qwen3", QWEN3, "chatml" },
        { "SmolLM2", SMOLLM2, "chatml" },
        { "Phi-3.5", PHI35, "phi-3" },
        { "cabin-tiny", CABIN_TINY, "phi-3" },
        { "Phi-4", PHI4, "phi-4" },
        { "Zephyr", ZEPHYR, "zephyr" },
        { "Llama 2", LLAMA2, "llama-2" },
        { "Mistral v0.1", MISTRAL, "mistral" },
        { "Mistral v1", MISTRAL_V1, "mistral-v1" },
        { "Mistral v0.3", MISTRAL_V3, "mistral-v3" },
        { "Mistral Nemo", MISTRAL_NEMO, "mistral-v3-tekken" },
        { "Mistral Large 2411", MISTRAL_V7, "mistral-v7" },
        { "Mistral Small 3", MISTRAL_SMALL3, "mistral-v7-tekken" },
        { "DeepSeek V3", DEEPSEEK_V3, "deepseek-3" },
        { "DeepSeek R1 distill", DEEPSEEK_R1, "deepseek-r1" },
        { "deepseek-llm chat", DEEPSEEK_LLM, "deepseek-llm" },
        { "deepseek-coder instruct", DEEPSEEK_CODER, "deepseek-coder" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const chat_template *t = chat_template_match(cases[i].src);
        CHECK(t && strcmp(t->name, cases[i].want) == 0, "%s: recognised as %s, want %s", cases[i].what,
              t ? t->name : "(none)", cases[i].want);
        CHECK(chat_template_for_file(cases[i].src, NULL, NULL) == t, "%s: the file rule agrees with match", cases[i].what);
    }
    // not recognised: no match, and detect falls back to plain
    const char *unknown[] = { VICUNA, COMMAND_R, "", "{{ messages }}" };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CHECK(chat_template_match(unknown[i]) == NULL, "unknown source %zu: not recognised", i);
        CHECK(strcmp(chat_template_for_file(unknown[i], NULL, NULL)->name, "plain") == 0, "unknown source %zu: plain", i);
    }
    CHECK(chat_template_match(NULL) == NULL && strcmp(chat_template_for_file(NULL, NULL, NULL)->name, "plain") == 0,
          "no source: not recognised, plain");
    // a file without a template chats in its architecture's (Gemma's), one with a template cabin
    // does not recognise in plain, whatever its architecture, and says so
    bool unrecognised = true;
    CHECK(strcmp(chat_template_for_file(NULL, "gemma3", &unrecognised)->name, "gemma") == 0 && !unrecognised,
          "a Gemma file without a template: gemma");
    CHECK(strcmp(chat_template_for_file(NULL, "gemma2", &unrecognised)->name, "gemma") == 0 && !unrecognised,
          "a Gemma 2 file without a template: gemma");
    CHECK(strcmp(chat_template_for_file("{{ weird }}", "gemma3", &unrecognised)->name, "plain") == 0 && unrecognised,
          "a template not recognised: plain, said");
    CHECK(strcmp(chat_template_for_file(NULL, "llama", &unrecognised)->name, "plain") == 0 && !unrecognised,
          "a llama file without a template: plain, nothing said");
}

// Every template: a system text and two user turns, the second after a reply closed by its
// end token (what the cache holds then), and after one that was cut off.
static void test_render(void) {
    static const struct { const char *name, *first, *second; } cases[] = {
        { "gemma",
          "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n",
          "\n<start_of_turn>user\nMore<end_of_turn>\n<start_of_turn>model\n" },
        { "llama-3",
          "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
          "<|start_header_id|>user<|end_header_id|>\n\nMore<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n" },
        { "llama-3.1",
          "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
          "<|start_header_id|>user<|end_header_id|>\n\nMore<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n" },
        { "chatml",
          "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
          "\n<|im_start|>user\nMore<|im_end|>\n<|im_start|>assistant\n" },
        { "phi-4",
          "<|im_start|>system<|im_sep|>Be brief.<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|>",
          "<|im_start|>user<|im_sep|>More<|im_end|><|im_start|>assistant<|im_sep|>" },
        { "phi-3",
          "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n",
          "\n<|user|>\nMore<|end|>\n<|assistant|>\n" },
        { "zephyr",
          "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\n",
          "\n<|user|>\nMore</s>\n<|assistant|>\n" },
        { "llama-2",
          "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]",
          "<s>[INST] More [/INST]" },
        { "mistral",
          "[INST] Be brief.\n\nHi [/INST]",
          "[INST] More [/INST]" },
        { "mistral-v1",
          " [INST] Be brief.\n\nHi [/INST]",
          " [INST] More [/INST]" },
        { "mistral-v3",
          "[INST] Be brief.\n\nHi[/INST]",
          "[INST] More[/INST]" },
        { "mistral-v3-tekken",
          "[INST]Be brief.\n\nHi[/INST]",
          "[INST]More[/INST]" },
        { "mistral-v7",
          "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi[/INST]",
          "[INST] More[/INST]" },
        { "mistral-v7-tekken",
          "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Hi[/INST]",
          "[INST]More[/INST]" },
        { "deepseek-3",
          "Be brief." DS_USER "Hi" DS_ASSISTANT,
          DS_USER "More" DS_ASSISTANT },
        { "deepseek-r1",
          "Be brief." DS_USER "Hi" DS_ASSISTANT "<think>\n",
          DS_USER "More" DS_ASSISTANT "<think>\n" },
        { "deepseek-llm",
          "Be brief.\n\nUser: Hi\n\nAssistant:",
          "User: More\n\nAssistant:" },
        { "deepseek-coder",
          "Be brief.\n### Instruction:\nHi\n### Response:\n",
          "\n### Instruction:\nMore\n### Response:\n" },
        { "plain",
          "Be brief.\n\nUser: Hi\nAssistant:",
          "\nUser: More\nAssistant:" },
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    CHECK(n == chat_template_count(), "a rendering case for each of the %d templates (%d)", chat_template_count(), n);
    for (int i = 0; i < n; i++) {
        const chat_template *t = chat_template_by_name(cases[i].name);
        CHECK(t != NULL, "%s: by name", cases[i].name);
        if (!t) continue;
        char *a = chat_template_render_turn(t, "Be brief.", "Hi", true, false);
        char *b = chat_template_render_turn(t, "Be brief.", "More", false, false);
        char *c = chat_template_render_turn(t, "Be brief.", "More", false, true);
        CHECK(strcmp(a, cases[i].first) == 0, "%s first turn: [%s]", t->name, a);
        CHECK(strcmp(b, cases[i].second) == 0, "%s second turn: [%s]", t->name, b);
        size_t k = strlen(t->assistant_end);
        CHECK(strncmp(c, t->assistant_end, k) == 0 && strcmp(c + k, cases[i].second) == 0,
              "%s second turn after a cut-off reply: [%s]", t->name, c);
        free(a); free(b); free(c);
    }
    // no system text: no system block, except where the template always has one
    char *t = chat_template_render_turn(chat_template_by_name("chatml"), NULL, "Hi", true, false);
    CHECK(strcmp(t, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") == 0, "chatml without system: [%s]", t);
    free(t);
    t = chat_template_render_turn(chat_template_by_name("gemma"), "", "Hi", true, false);
    CHECK(strcmp(t, "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n") == 0, "gemma without system: [%s]", t);
    free(t);
    t = chat_template_render_turn(chat_template_by_name("llama-3.1"), NULL, "Hi", true, false);
    CHECK(strcmp(t, "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                    "Today Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                    "<|start_header_id|>assistant<|end_header_id|>\n\n") == 0, "llama-3.1 without system: [%s]", t);
    free(t);
    // trimmed where the template trims (| trim), kept where it does not
    t = chat_template_render_turn(chat_template_by_name("gemma"), " S \n", "\n Hi  ", true, false);
    CHECK(strcmp(t, "<start_of_turn>user\nS\n\nHi<end_of_turn>\n<start_of_turn>model\n") == 0, "gemma trims: [%s]", t);
    free(t);
    t = chat_template_render_turn(chat_template_by_name("chatml"), NULL, " Hi ", true, false);
    CHECK(strcmp(t, "<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n") == 0, "chatml keeps spaces: [%s]", t);
    free(t);
}

static void test_names(void) {
    const char *names = chat_template_names();
    int n = chat_template_count(), listed = 1;
    for (const char *p = names; (p = strstr(p, ", ")); p += 2) listed++;
    CHECK(listed == n, "the names list has the %d templates (%d): %s", n, listed, names);
    for (int i = 0; i < n; i++) {
        const chat_template *t = chat_template_at(i);
        CHECK(chat_template_by_name(t->name) == t && strstr(names, t->name), "%s: by name, and listed", t->name);
    }
    CHECK(chat_template_at(n) == NULL && chat_template_at(-1) == NULL, "chat_template_at out of range");
    CHECK(chat_template_by_name("nope") == NULL, "unknown name");
}

static void test_default_system(void) {
    const chat_template *chatml = chat_template_by_name("chatml");
    char *s = chat_template_default_system(chatml, QWEN25);
    CHECK(s && strcmp(s, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.") == 0, "Qwen2.5: [%s]",
          s ? s : "(none)");
    free(s);
    s = chat_template_default_system(chatml, SMOLLM2);
    CHECK(s && strcmp(s, "You are a helpful AI assistant named SmolLM, trained by Hugging Face") == 0, "SmolLM2: [%s]",
          s ? s : "(none)");
    free(s);
    // Qwen/Qwen2-*-Instruct
    s = chat_template_default_system(chatml, "{% for message in messages %}{% if loop.first and messages[0]['role'] != "
                                             "'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
                                             "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                                             "'<|im_end|>' + '\\n'}}{% endfor %}");
    CHECK(s && strcmp(s, "You are a helpful assistant.") == 0, "Qwen2: [%s]", s ? s : "(none)");
    free(s);
    s = chat_template_default_system(chatml, "{{ '<|im_start|>system\\nLine one.\\nIt\\'s \"two\".<|im_end|>' }}");
    CHECK(s && strcmp(s, "Line one.\nIt's \"two\".") == 0, "escapes resolved, the newline after the end token optional: [%s]",
          s ? s : "(none)");
    free(s);
    const struct { const chat_template *t; const char *src; } none[] = {
        { chatml, QWEN3 }, { chatml, "'<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n'" },
        { chatml, "'<|im_start|>system\\n{{ x }}<|im_end|>\\n'" }, { chatml, "'<|im_start|>system\\nno end" },
        { chatml, "'<|im_start|>system\\n<|im_end|>\\n'" }, { chatml, NULL }, { chatml, "" }, { chatml, "'" },
        { chat_template_by_name("gemma"), GEMMA3 }, { chat_template_by_name("llama-3.1"), LLAMA31 },
        { chat_template_by_name("mistral-v7-tekken"), MISTRAL_SMALL3 },
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        s = chat_template_default_system(none[i].t, none[i].src);
        CHECK(s == NULL, "no default system text in case %zu: [%s]", i, s);
        free(s);
    }
}

// ---- through the session ----

static char tmpdir[256];

// A tiny Gemma-style vocabulary: SentencePiece without the space prefix, <start_of_turn> and
// <end_of_turn> control tokens (ids 4 and 5), byte fallback (6..261), then a few pieces.
static const char *const PIECES[] = { "\xE2\x96\x81", "\n", "\n\n", "u", "s", "e", "r", "us", "use", "user",
                                      "m", "o", "d", "l", "mo", "mod", "mode", "model", "H", "i", "Hi" };
#define N_PIECES ((int)(sizeof PIECES / sizeof PIECES[0]))
#define N_CHAT_VOCAB (6 + 256 + N_PIECES)
enum { ID_PAD, ID_EOS, ID_BOS, ID_UNK, ID_SOT, ID_EOT, ID_BYTE0 };

static int32_t piece_id(const char *piece) {
    for (int i = 0; i < N_PIECES; i++)
        if (strcmp(PIECES[i], piece) == 0) return ID_BYTE0 + 256 + i;
    return -1;
}
static int32_t byte_id(unsigned char b) { return ID_BYTE0 + b; }

// A random-weight model with that vocabulary and the given tokenizer.chat_template: its path.
static const char *chat_model(const char *name, const char *chat_template) {
    static char path[512];
    char vocab[512], bytes[256][8];
    const char *tokens[N_CHAT_VOCAB];
    int32_t types[N_CHAT_VOCAB];
    float scores[N_CHAT_VOCAB];
    static const char *const specials[] = { "<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>" };
    for (int i = 0; i < 6; i++) { tokens[i] = specials[i]; types[i] = i == ID_UNK ? TT_UNKNOWN : TT_CONTROL; scores[i] = 0; }
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        tokens[ID_BYTE0 + b] = bytes[b]; types[ID_BYTE0 + b] = TT_BYTE; scores[ID_BYTE0 + b] = 0;
    }
    for (int i = 0; i < N_PIECES; i++) {   // longer pieces score higher: the merges build whole words
        tokens[ID_BYTE0 + 256 + i] = PIECES[i];
        types[ID_BYTE0 + 256 + i] = TT_NORMAL;
        scores[ID_BYTE0 + 256 + i] = (float)strlen(PIECES[i]) - 10.0f;
    }
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "tokenizer.ggml.model", "llama");
    gguf_set_str(w, "tokenizer.ggml.pre", "default");
    gguf_set_arr_str(w, "tokenizer.ggml.tokens", tokens, N_CHAT_VOCAB);
    gguf_set_arr_data(w, "tokenizer.ggml.scores", GGUF_F32, scores, N_CHAT_VOCAB);
    gguf_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_I32, types, N_CHAT_VOCAB);
    gguf_set_u32(w, "tokenizer.ggml.bos_token_id", ID_BOS);
    gguf_set_u32(w, "tokenizer.ggml.eos_token_id", ID_EOS);
    gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", ID_UNK);
    gguf_set_u32(w, "tokenizer.ggml.padding_token_id", ID_PAD);
    gguf_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    gguf_set_bool(w, "tokenizer.ggml.add_space_prefix", false);
    if (chat_template) gguf_set_str(w, "tokenizer.chat_template", chat_template);
    snprintf(vocab, sizeof vocab, "%s/%s-vocab.gguf", tmpdir, name);
    snprintf(path, sizeof path, "%s/%s.gguf", tmpdir, name);
    errbuf err = {{0}};
    int rc = gguf_write_file(w, vocab, &err);
    gguf_writer_free(w);
    if (!rc) {
        modelgen_opts o = modelgen_defaults();
        o.dim = 32; o.n_layer = 1; o.n_head = 2; o.n_kv_head = 1; o.ffn_dim = 32; o.n_ctx = 512;
        o.vocab_from = vocab;
        rc = modelgen_write(&o, path, &err);
    }
    unlink(vocab);
    CHECK(rc == 0, "%s: %s", name, err.msg);
    return rc ? NULL : path;
}

static session *open_chat(const char *path, const char *system, errbuf *err) {
    session_opts o = session_opts_default();
    o.model_path = path;
    o.n_ctx = 512;
    o.max_reply_tokens = 1;
    o.backend.name = "cpu";
    o.backend.n_threads = 1;
    o.sampling.temp = 0;
    o.system_prompt = system;
    return session_open(&o, err);
}

static bool stop_at_once(void *ud, int32_t token, const char *piece, int len) {
    (void)ud; (void)token; (void)piece; (void)len;
    return false;
}

// Compares the first n tokens of got with want; prints both on a mismatch.
static void check_ids(const char *what, const int32_t *got, int n_got, const int32_t *want, int n_want) {
    bool same = n_got >= n_want;
    for (int i = 0; same && i < n_want; i++) same = got[i] == want[i];
    char g[512] = "", w[512] = "";
    for (int i = 0, o = 0; i < n_got && i < 40 && o < 480; i++) o += snprintf(g + o, sizeof g - (size_t)o, " %d", got[i]);
    for (int i = 0, o = 0; i < n_want && o < 480; i++) o += snprintf(w + o, sizeof w - (size_t)o, " %d", want[i]);
    CHECK(same, "%s: tokens%s, want%s", what, g, w);
}

// `cabin chat` on a Gemma file: the session recognises the template and the first turn goes into
// the cache as Gemma's own template lays it out, token by token; so does the next user turn.
static void test_gemma_session(void) {
    const char *path = chat_model("gemma", GEMMA3);
    if (!path) return;
    errbuf err = {{0}};
    session *s = open_chat(path, "Be brief.", &err);
    CHECK(s != NULL, "gemma session: %s", err.msg);
    if (!s) { unlink(path); return; }
    session_stats st;
    session_get_stats(s, &st);
    CHECK(strcmp(st.template_name, "gemma") == 0, "the session's template: %s", st.template_name);
    char note[ERR_LINE];
    CHECK(!session_take_notice(s, note, sizeof note), "a recognised template: no notice");
    int rc = session_chat(s, "Hi", stop_at_once, NULL, &err);
    CHECK(rc == 0, "gemma chat turn: %s", err.msg);
    // <bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n
    const int32_t first[] = {
        ID_BOS, ID_SOT, piece_id("user"), piece_id("\n"),
        byte_id('B'), piece_id("e"), piece_id("\xE2\x96\x81"), byte_id('b'), piece_id("r"), piece_id("i"), piece_id("e"),
        byte_id('f'), byte_id('.'), piece_id("\n\n"), piece_id("Hi"),
        ID_EOT, piece_id("\n"), ID_SOT, piece_id("model"), piece_id("\n"),
    };
    const int32_t *hist;
    int n = session_history(s, &hist);
    check_ids("gemma first turn", hist, n, first, (int)(sizeof first / sizeof first[0]));
    // the next user turn, after a reply that ended with <end_of_turn>
    char *text = chat_template_render_turn(chat_template_by_name("gemma"), "Be brief.", "More", false, false);
    int32_t *ids = NULL;
    n = session_tokenize(s, text, false, &ids, &err);
    const int32_t second[] = {
        piece_id("\n"), ID_SOT, piece_id("user"), piece_id("\n"), byte_id('M'), piece_id("o"), piece_id("r"), piece_id("e"),
        ID_EOT, piece_id("\n"), ID_SOT, piece_id("model"), piece_id("\n"),
    };
    int n_second = (int)(sizeof second / sizeof second[0]);
    CHECK(n == n_second, "gemma second turn: %d tokens, want %d", n, n_second);
    check_ids("gemma second turn", ids, n, second, n_second);
    free(ids);
    free(text);
    session_close(s);
    unlink(path);
}

// The reference's Gemma 3 file carries no template: a Gemma file chats in Gemma's turns anyway
// (chat_template_for_file), token by token the tokenizer's ids of that text.
static void test_gemma_ref_file(void) {
    const char *dir = test_ref_dir();
    if (!dir) { SKIP("../shared/ref not present: the Gemma 3 reference file not checked"); return; }
    char path[600];
    snprintf(path, sizeof path, "%s/next/models/gemma3-d256-F16.gguf", dir);
    errbuf err = {{0}};
    session *s = open_chat(path, NULL, &err);
    CHECK(s != NULL, "%s", err.msg);
    if (!s) return;
    session_stats st;
    session_get_stats(s, &st);
    CHECK(strcmp(st.template_name, "gemma") == 0, "gemma3 file without a template: %s", st.template_name);
    CHECK(session_chat(s, "hi there", stop_at_once, NULL, &err) == 0, "%s", err.msg);
    int32_t *want = NULL;
    int n_want = session_tokenize(s, "<start_of_turn>user\nhi there<end_of_turn>\n<start_of_turn>model\n", true, &want, &err);
    const int32_t *hist;
    int n = session_history(s, &hist);
    CHECK(n_want > 8 && n >= n_want, "gemma3 file: %d tokens in the cache, %d in the rendered turn", n, n_want);
    if (n_want > 0) check_ids("gemma3 file's first turn", hist, n, want, n_want);
    free(want);
    session_close(s);
}

// A template not recognised: plain, and one notice naming the file and the names; none for a file
// without a template. The file's default system text is used when the person gives none.
static void test_session_fallback(void) {
    const char *path = chat_model("vicuna", VICUNA);
    errbuf err = {{0}};
    session *s = path ? open_chat(path, NULL, &err) : NULL;
    CHECK(s != NULL, "vicuna session: %s", err.msg);
    if (s) {
        session_stats st;
        session_get_stats(s, &st);
        char note[ERR_LINE];
        bool said = session_take_notice(s, note, sizeof note);
        CHECK(strcmp(st.template_name, "plain") == 0, "not recognised: %s", st.template_name);
        CHECK(said && strstr(note, path) && strstr(note, "tokenizer.chat_template not recognised: using the plain template") &&
              strstr(note, "--chat-template NAME") && strstr(note, chat_template_names()) && !strchr(note, '\n'),
              "one line: %s", said ? note : "(none)");
        CHECK(!session_take_notice(s, note, sizeof note), "said once");
        session_close(s);
    }
    if (path) unlink(path);
    path = chat_model("none", NULL);
    s = path ? open_chat(path, NULL, &err) : NULL;
    if (s) {
        char note[ERR_LINE];
        CHECK(!session_take_notice(s, note, sizeof note), "no template in the file: no notice");
        session_close(s);
    }
    if (path) unlink(path);
    // Qwen2.5's default system text: in the first turn when none is given, not when one is
    path = chat_model("qwen", QWEN25);
    for (int k = 0; path && k < 2; k++) {
        const char *system = k ? "Be brief." : NULL;
        s = open_chat(path, system, &err);
        CHECK(s != NULL, "qwen session: %s", err.msg);
        if (!s) break;
        const char *dflt = session_default_system(s);
        CHECK(dflt && strcmp(dflt, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.") == 0,
              "the file's default system text (what a tools section follows): %s", dflt ? dflt : "(none)");
        int rc = session_chat(s, "Hi", stop_at_once, NULL, &err);
        char want[256];
        snprintf(want, sizeof want, "<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
                 k ? system : "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
        int32_t *ids = NULL;
        int n = session_tokenize(s, want, true, &ids, &err);
        const int32_t *hist;
        int n_hist = session_history(s, &hist);
        CHECK(rc == 0 && n > 0, "qwen turn: %s", err.msg);
        check_ids(k ? "qwen with a system text" : "qwen's default system text", hist, n_hist, ids, n);
        free(ids);
        session_close(s);
    }
    if (path) unlink(path);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cabin-test-chat-XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    test_detect();
    test_render();
    test_names();
    test_default_system();
    test_gemma_session();
    test_gemma_ref_file();
    test_session_fallback();
    rmdir(tmpdir);
    return test_finish();
}
