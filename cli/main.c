// cabin: terminal workbench and on-device assistant. Dispatches to the commands.
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    { "workbench",  cmd_workbench,  "the ncurses workbench: chat with live panels (the default on a terminal)" },
    { "gui",        cmd_gui,        "the workbench in a window (SDL2): panels as graphics, hold Space to talk" },
    { "chat",       cmd_chat,       "chat with a model in the terminal (readline, streamed replies)" },
    { "serve",      cmd_serve,      "the model as a local OpenAI-compatible HTTP service (the car's actions as tools)" },
    { "generate",   cmd_generate,   "raw completion of a prompt, streamed" },
    { "logits",     cmd_logits,     "the last position's logits of a prompt" },
    { "bench",      cmd_bench,      "prefill and decode speed, against this machine's memory bandwidth" },
    { "scene",      cmd_scene,      "play a scene file (scripted demo or end-to-end check)" },
    { "quantize",   cmd_quantize,   "write a model at another precision (a plan; importance-aware Q4_0)" },
    { "ppl",        cmd_ppl,        "perplexity of a text (default: the embedded model's held-out dialogues)" },
    { "eval-assistant", cmd_eval_assistant, "action accuracy and perplexity on the held-out assistant dialogues" },
    { "power",      cmd_power,      "power sources (RAPL, hwmon, NVML, battery; else an estimate) and their draw" },
    { "heatmap",    cmd_heatmap,    "quantization sensitivity per layer and tensor: grid, JSON/CSV, a plan within a budget" },
    { "sweep",      cmd_sweep,      "speed, energy, size and KL per precision, Pareto frontier marked" },
    { "compare",    cmd_compare,    "two precision plans (or KV formats) on the same prompts: replies side by side, speed, energy, KL, significance" },
    { "info",       cmd_info,       "what a GGUF file holds: architecture, sizes, types, tokenizer" },
    { "tokenize",   cmd_tokenize,   "text to token ids" },
    { "devices",    cmd_devices,    "the Vulkan devices (index for --device, memory, features)" },
    { "voice",      cmd_voice,      "spoken turns: push-to-talk or hands-free, replies spoken as they stream" },
    { "audio",      cmd_audio,      "audio devices (cabin audio devices) for voice --audio-in/--audio-out" },
    { "make-model", cmd_make_model, "write a random-weight model of any shape and type (tests, bench)" },
    { "version",    cmd_version,    "the version, the commit, this build's layers and CPU kernel tables (also --version)" },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "cabin — terminal workbench and on-device assistant\n\n"
               "usage: cabin [COMMAND] [OPTIONS]\n\n"
               "With no command, cabin opens the workbench on the embedded default model (a plain\n"
               "chat when stdin or stdout is not a terminal).\n\n"
               "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-15s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-15s %s\n", "help", "this text; `cabin COMMAND --help` for a command's options");
}

int main(int argc, char **argv) {
    bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    if (argc < 2) {
        char *chat_argv[] = { tty ? "workbench" : "chat", NULL };
        return tty ? cmd_workbench(1, chat_argv) : cmd_chat(1, chat_argv);
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            for (size_t i = 0; i < N_COMMANDS; i++)
                if (strcmp(commands[i].name, argv[2]) == 0) {
                    char *help_argv[] = { argv[2], "--help", NULL };
                    return commands[i].fn(2, help_argv);
                }
            fprintf(stderr, "cabin: unknown command '%s' (see cabin help)\n", argv[2]);
            return 2;
        }
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0) return cmd_version(argc - 1, argv + 1);
    if (name[0] == '-') {   // options without a command: the workbench (or chat) with them
        argv[0] = tty ? "workbench" : "chat";
        return tty ? cmd_workbench(argc, argv) : cmd_chat(argc, argv);
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "cabin: unknown command '%s' (see cabin help)\n", name);
    return 2;
}
