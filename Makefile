# ctxbench: every command a user or CI runs. Nothing needs installing by hand beyond a Rust
# toolchain (cargo); `make test` also makes a Python venv with NVRTC from PyPI (.venv-nvrtc) so
# that every CUDA kernel is compiled in the tests, GPU or not.

CARGO ?= cargo
# The cargo profile of `make build` and of the binary the experiment targets run: release for
# figures and timings. CI runs `make regress-ci` on the binary `make test` built (TEST_PROFILE).
PROFILE ?= release
# The profile of the tests: release optimisation with debug assertions and overflow checks
# (Cargo.toml's [profile.ci]).
TEST_PROFILE ?= ci
# Respects CARGO_TARGET_DIR, like cargo itself.
BIN := $(or $(CARGO_TARGET_DIR),target)/$(PROFILE)/ctxbench
E21 := datasets/earnings21/nlp_references

.PHONY: fidelity librispeech-tts librispeech-tts-full librispeech-bias nvrtc-venv python-venv python python-test peers-python sphinx-lm lm-en-us-3gram gpu-bundle chen18-table2 sphinx-test sphinx-test-data sphinx-atco2 atco2-tts earnings21-tts lm-en-us tts-install peer-sphinx all build test reproduce reproduce-quick reproduce-quick-all regress regress-ci regress-update selfcheck slurm-sweep slurm-check bench bench-score bench-decode bench-overhead bench-overhead-instructions bench-scale lint fmt clean lm-earnings22 peer-kenlm graph-sizes data-stats peers-ctc peers peer-ngpu-lm peer-kaldi-ctc bataev-derived

all: build

build:
	$(CARGO) build --profile $(PROFILE) --workspace

## The tests: what .ci/run runs.
test: nvrtc-venv python-venv
	$(CARGO) test --profile $(TEST_PROFILE) --workspace
	@# The pipelines' shim tests again with each grid's threads reversed, shuffled, then
	@# shuffled on two OS threads at once with 32-thread blocks (fibers meeting at each
	@# barrier of the block-cooperative kernels): a result that depends on which GPU thread
	@# runs first, on a race between them, or on a missing barrier fails here (ctx-cuda's shim.rs).
	CTX_SHIM_SCHEDULE=1 $(CARGO) test --profile $(TEST_PROFILE) -q -p hclg-boost -p ctc-wfst -p ngpu-lm --test online --test ctc --test fusion
	CTX_SHIM_SCHEDULE=24301 $(CARGO) test --profile $(TEST_PROFILE) -q -p hclg-boost -p ctc-wfst -p ngpu-lm --test online --test ctc --test fusion
	CTX_SHIM_BLOCK=32 CTX_SHIM_THREADS=2 CTX_SHIM_SCHEDULE=24301 $(CARGO) test --profile $(TEST_PROFILE) -q -p hclg-boost -p ctc-wfst -p ngpu-lm --test online --test ctc --test fusion
	@# Said where a reader of the output sees it (the test runner hides a skipped test's line).
	@test -f $(NVRTC_VENV)/.ok || echo "make test: NVRTC could not be installed, so the NVRTC compile check of kernels/ was SKIPPED (the shim tests ran)"
	@# The Python package's tests (the wheel built on the test profile's artifacts).
	@if test -f $(PY_VENV)/.ok; then $(MAKE) --no-print-directory python-test; \
	else echo "make test: maturin/numpy/pytest could not be installed, so the Python package's tests were SKIPPED"; fi

## The Python package (crates/ctxbench-py, PyO3 + maturin): `make python` builds the abi3 wheel
## into target/wheels and installs it into .venv-py (maturin, numpy, pytest and pyarrow from PyPI);
## `make python-test` runs its pytest suite against the CLI. PY_PROFILE=release for a fast wheel.
PY_VENV := .venv-py
PY_PROFILE ?= $(TEST_PROFILE)
PY_WHEELS := $(or $(CARGO_TARGET_DIR),target)/wheels
python-venv:
	@test -f $(PY_VENV)/.ok || { rm -rf $(PY_VENV) && python3 -m venv $(PY_VENV) \
		&& $(PY_VENV)/bin/pip install -q --disable-pip-version-check maturin==1.16.0 numpy pytest pyarrow \
		&& touch $(PY_VENV)/.ok; } \
		|| echo "python-venv: could not install maturin, numpy and pytest from PyPI"
python: python-venv
	rm -f $(PY_WHEELS)/ctxbench-*.whl
	cd crates/ctxbench-py && $(abspath $(PY_VENV))/bin/maturin build --quiet --profile $(PY_PROFILE) -o $(abspath $(PY_WHEELS))
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps $(PY_WHEELS)/ctxbench-*.whl
python-test: python
	CTXBENCH_BIN=$(abspath $(or $(CARGO_TARGET_DIR),target)/$(TEST_PROFILE)/ctxbench) $(PY_VENV)/bin/pytest -q crates/ctxbench-py/tests

## NVRTC (CUDA 13, PyPI wheel, ~170 MB) in .venv-nvrtc: ctx-cuda's tests compile every kernel of
## kernels/ with it. Without network or Python the tests say the NVRTC check is skipped.
NVRTC_VENV := .venv-nvrtc
NVRTC_WHEEL := nvidia-cuda-nvrtc==13.5.37
nvrtc-venv:
	@test -f $(NVRTC_VENV)/.ok || { rm -rf $(NVRTC_VENV) && python3 -m venv $(NVRTC_VENV) \
		&& $(NVRTC_VENV)/bin/pip install -q --disable-pip-version-check $(NVRTC_WHEEL) \
		&& touch $(NVRTC_VENV)/.ok; } \
		|| echo "nvrtc-venv: could not install $(NVRTC_WHEEL) from PyPI; the NVRTC kernel check will be skipped"

## The main job: every experiment marked `reproduce = true` on the full data; writes
## results/<id>/ (points.csv/.parquet, table.md/.tex, plots, run.json) and results/README.md.
## Finished points are reused (keyed by config, data and code version); add FORCE=--force to redo.
reproduce: build
	$(BIN) run --reproduce $(FORCE)
	$(BIN) fidelity

## Each method's effect beside the paper's over every committed table: results/fidelity/.
fidelity: build
	$(BIN) fidelity

## The quick tour (about 5 minutes from a fresh clone): the experiments marked `tour = true`,
## one or two tables per paper, on the quick subsets, under results/quick/.
reproduce-quick: build
	$(BIN) run --tour $(FORCE)

## Every `reproduce = true` experiment on the quick subsets (about 20 minutes from a fresh clone).
reproduce-quick-all: build
	$(BIN) run --reproduce --quick $(FORCE)

## Real audio through the whole pipeline (issue 41): pocketsphinx's test recordings (cards and
## LibriVox) are the `kind = "audio"` dataset pocketsphinx-test, scored by CMU Sphinx en-us
## (crates/sphinx-am, identical to pocketsphinx) while `ctxbench decode` decodes them.
sphinx-test: build
	$(BIN) decode --dataset pocketsphinx-test --methods none --threads 1 --hyp-dir cache/sphinx-test/hyp

## Regenerates datasets/pocketsphinx-test/{data,lexicon.txt,lm.arpa} from the transcriptions.
sphinx-test-data:
	$(CARGO) run --profile $(PROFILE) -q -p sphinx-am --example sphinx_files -- transcripts . \
		datasets/pocketsphinx-test \
		datasets/pocketsphinx-test/cards=datasets/pocketsphinx-test/cards/cards.transcription \
		datasets/pocketsphinx-test/librivox=datasets/pocketsphinx-test/librivox/transcription

## Festival (Debian) with two voices for the speech renderings; nothing else needs it.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
tts-install:
	@{ command -v text2wave >/dev/null && [ -d /usr/share/festival/voices/english/kal_diphone ]; } || \
		{ $(SUDO) apt-get update -qq && \
		$(SUDO) apt-get install -y -qq festival festvox-us-slt-hts festvox-kallpc16k; }

## A data folder's wav.scp for a folder of <utt>.wav (paths relative to the data folder).
define wav_scp
	mkdir -p $(1)/data && for f in $$(ls $(1)/wav/*.wav | sort); do \
		b=$$(basename $$f .wav); echo "$$b ../wav/$$b.wav"; done > $(1)/data/wav.scp
endef

## The 60 quick ATCO2-1h utterances spoken by Festival: datasets/atco2-tts/ (committed; dataset
## atco2-tts-1h). Files whose recorded voice and text match are kept, so this remakes nothing
## unless the set's text changed.
atco2-tts: build tts-install
	$(BIN) data prepare atco2-sim-1h --quick --out cache/atco2-tts/prep
	scripts/tts_render.sh cache/atco2-tts/prep/text datasets/atco2-tts/wav
	$(call wav_scp,datasets/atco2-tts)
	mkdir -p datasets/atco2-tts/data-rare && sed 's/^atco2-sim-1h-/atco2-sim-1h-rare-/' \
		datasets/atco2-tts/data/wav.scp > datasets/atco2-tts/data-rare/wav.scp

## 000's and 003's methods on real acoustics (issue 41): results/real-atco2-tts/.
sphinx-atco2: build
	$(BIN) run experiments/real-atco2-tts.toml

## The quick Earnings-21 segments spoken by Festival (6 minutes; cached, not committed: dataset
## earnings21-tts), and the simulator against the real model on them: results/sim-vs-real-earnings/.
earnings21-tts: build tts-install
	$(BIN) data prepare earnings21 --quick --out cache/earnings21-tts/prep
	scripts/tts_render.sh cache/earnings21-tts/prep/text cache/earnings21-tts/wav
	$(call wav_scp,cache/earnings21-tts)
	$(BIN) run experiments/sim-vs-real-earnings.toml

## pocketsphinx itself (PyPI, in .venv-peers) on the audio of make sphinx-test and atco2-tts-1h:
## its default LM, and the set's LM and lexicon (what our graph is built from); WER and RTFx.
## Hypotheses and timings go to results/peers/pocketsphinx/ (committed): the `peer` rows of
## experiments/real-*.toml read them.
peer-sphinx: sphinx-test
	test -x .venv-peers/bin/python || python3 -m venv .venv-peers
	.venv-peers/bin/pip install -q pocketsphinx==5.1.1
	.venv-peers/bin/python scripts/peer_pocketsphinx.py datasets/pocketsphinx-test/data/text \
		datasets/pocketsphinx-test/data/wav.scp datasets/pocketsphinx-test/lm.arpa \
		datasets/pocketsphinx-test/lexicon.txt results/peers/pocketsphinx/pocketsphinx-test
	$(BIN) export --dataset atco2-sim-1h --quick --with-lm --format npy --out cache/sphinx-atco2/export
	.venv-peers/bin/python scripts/peer_pocketsphinx.py cache/sphinx-atco2/export/data/text \
		datasets/atco2-tts/data/wav.scp cache/sphinx-atco2/export/lm/G.arpa \
		cache/sphinx-atco2/export/lm/lexicon.txt results/peers/pocketsphinx/atco2-tts-1h
	$(BIN) score --ref cache/sphinx-atco2/export/data/text \
		--hyp results/peers/pocketsphinx/atco2-tts-1h/same-lm.txt \
		--entities cache/sphinx-atco2/export/entities.txt

## pocketsphinx's general English LM (en-us.lm.bin, PyPI wheel) as a pruned bigram with its
## dictionary (scripts/en_us_lm.py), and the ten real recordings decoded with it by ctxbench and by
## pocketsphinx (its full 3-gram LM, and this bigram): cache/lm-en-us/.
lm-en-us: build
	test -x .venv-peers/bin/python || python3 -m venv .venv-peers
	.venv-peers/bin/pip install -q pocketsphinx==5.1.1
	.venv-peers/bin/python scripts/en_us_lm.py . cache/lm-en-us
	$(BIN) decode --registry cache/lm-en-us/datasets.toml --dataset pocketsphinx-test-en-us \
		--methods none --threads 1 --hyp-dir cache/lm-en-us/hyp
	.venv-peers/bin/python scripts/peer_pocketsphinx.py datasets/pocketsphinx-test/data/text \
		datasets/pocketsphinx-test/data/wav.scp cache/lm-en-us/lm.arpa cache/lm-en-us/lexicon.txt

## pocketsphinx's general English LM read by ctxbench itself (issue 55: `ctxbench lm from-sphinx`,
## every order) and checked against pocketsphinx's own scores: cache/lm-en-us/en-us-3gram.arpa.
sphinx-lm: build
	test -x .venv-peers/bin/python || python3 -m venv .venv-peers
	.venv-peers/bin/pip install -q pocketsphinx==5.1.1
	mkdir -p cache/lm-en-us
	$(BIN) lm from-sphinx --bin "$$(.venv-peers/bin/python -c 'import pocketsphinx, os; print(os.path.join(pocketsphinx.get_model_path(), "en-us", "en-us.lm.bin"))')" \
		--out cache/lm-en-us/en-us-3gram.arpa
	.venv-peers/bin/python scripts/sphinx_lm_check.py cache/lm-en-us/en-us-3gram.arpa datasets/pocketsphinx-test/data/text

## The same ten recordings on pocketsphinx's LM as a pruned trigram (issue 55: every order read by
## `ctxbench lm from-sphinx`, trigrams and bigrams at log10 p >= -2.5, back-offs recomputed), decoded
## by ctxbench and by pocketsphinx on the same LM and lexicon: cache/lm-en-us-3gram/.
lm-en-us-3gram: sphinx-lm
	.venv-peers/bin/python scripts/en_us_lm.py . cache/lm-en-us-3gram --from-arpa cache/lm-en-us/en-us-3gram.arpa --trigrams
	$(BIN) decode --registry cache/lm-en-us-3gram/datasets.toml --dataset pocketsphinx-test-en-us \
		--methods none --threads 1 --hyp-dir cache/lm-en-us-3gram/hyp
	.venv-peers/bin/python scripts/peer_pocketsphinx.py datasets/pocketsphinx-test/data/text \
		datasets/pocketsphinx-test/data/wav.scp cache/lm-en-us-3gram/lm.arpa cache/lm-en-us-3gram/lexicon.txt

## pocketsphinx's dictionary (PyPI wheel, in .venv-peers): pronunciations of the biasing lists.
PS_DICT = $$(.venv-peers/bin/python -c 'import pocketsphinx, os; print(os.path.join(pocketsphinx.get_model_path(), "en-us", "cmudict-en-us.dict"))')

## The LibriSpeech biasing benchmark (Le et al. 2021) spoken by Festival (issue 55): every 38th
## test-clean utterance of its reference file (datasets/librispeech-tts/source/), 69 utterances in
## two voices, with lists, rare words and list pronunciations: datasets/librispeech-tts/
## (committed, 14 MB; files whose voice and text match are kept).
librispeech-tts: tts-install
	test -x .venv-peers/bin/python || python3 -m venv .venv-peers
	.venv-peers/bin/pip install -q pocketsphinx==5.1.1
	python3 scripts/librispeech_tts.py datasets/librispeech-tts/source/test-clean.biasing_100.tsv.gz \
		"$(PS_DICT)" datasets/librispeech-tts --every 38

## All 2,620 test-clean utterances spoken (5.4 h, about 20 minutes to render; cached, not
## committed): dataset librispeech-bias-tts-full of cache/librispeech-tts-full/datasets.toml.
librispeech-tts-full: tts-install lm-en-us-3gram
	python3 scripts/librispeech_tts.py datasets/librispeech-tts/source/test-clean.biasing_100.tsv.gz \
		"$(PS_DICT)" cache/librispeech-tts-full --every 1
	sed -E -e 's#^\[librispeech-bias-tts\]#[librispeech-bias-tts-full]#' \
		-e 's#"datasets/librispeech-tts/#"$(CURDIR)/cache/librispeech-tts-full/#' \
		-e 's#"(datasets/sphinx-en-us|cache/lm-en-us-3gram/[a-z.]*)"#"$(CURDIR)/\1"#' \
		-e 's#^description = .*#description = "all 2,620 test-clean utterances of the LibriSpeech biasing benchmark as Festival speech"#' \
		datasets.toml | awk '/^\[librispeech-bias-tts-full\]/{p=1} /^\[/{if(!/full/)p=0} p' \
		> cache/librispeech-tts-full/datasets.toml

## pocketsphinx on the spoken subset, with the same LM and dictionary as ours and with its own:
## results/peers/pocketsphinx/librispeech-bias-tts/ (committed); then the table,
## results/real-librispeech-bias/.
librispeech-bias: lm-en-us-3gram
	.venv-peers/bin/python scripts/peer_pocketsphinx.py datasets/librispeech-tts/data/text \
		datasets/librispeech-tts/data/wav.scp cache/lm-en-us-3gram/lm.arpa \
		cache/lm-en-us-3gram/lexicon.txt results/peers/pocketsphinx/librispeech-bias-tts
	$(BIN) run experiments/real-librispeech-bias.toml

## 002 Table 2: decoder speed against concurrent streams (CPU rows measured here, GPU rows from
## results/gpu/); results/chen18-table2/.
chen18-table2: build
	scripts/chen18_table2.sh

## The GPU run's binaries in gpu-bundle/ (then gpu-bundle/gpu_run.sh on a GPU machine).
gpu-bundle:
	scripts/gpu_bundle.sh

## The regression check: quick experiments against results/baselines/*.json.
regress: build
	$(BIN) regress

## What CI runs after `make test`: the same check on the binary the tests built (Cargo.toml's
## [profile.ci]), so nothing is compiled twice (`cargo build` would rebuild the workspace: the tests'
## dev-dependencies change a shared crate's features).
TEST_BIN := $(or $(CARGO_TARGET_DIR),target)/$(TEST_PROFILE)/ctxbench
regress-ci:
	@test -x $(TEST_BIN) || { echo "regress-ci: $(TEST_BIN) is missing; run make test first" >&2; exit 1; }
	$(TEST_BIN) regress
	$(TEST_BIN) fidelity --check

## Rewrite the baselines (after a deliberate change of figures; commit them with it).
regress-update: build
	$(BIN) regress --update

## Score the shipped Earnings-21 references against themselves (must print 0.00% everywhere).
selfcheck: build
	@mkdir -p results/earnings21-selfcheck
	$(BIN) score --ref $(E21) --hyp $(E21) --json results/earnings21-selfcheck/score.json \
		> results/earnings21-selfcheck/score.txt.tmp
	mv results/earnings21-selfcheck/score.txt.tmp results/earnings21-selfcheck/score.txt
	@cat results/earnings21-selfcheck/score.txt | head -8

## A Slurm job array for a big sweep: make slurm-sweep EXP=experiments/x.toml SHARDS=8
slurm-sweep: build
	scripts/slurm-sweep.sh $(EXP) $(SHARDS)

## The sweep on a real Slurm: a private single-node cluster (munged, slurmctld, slurmd under a
## temporary folder, stopped at the end) runs a 3-shard array of the quick ablation-beam, one
## shard cancelled mid-run and resubmitted, and its merge; the merged points must equal one
## process's (scripts/slurm-check.sh). Installs Debian's slurm-wlm and munge when missing. CI
## runs it on the binary `make test` built.
slurm-check:
	@command -v slurmctld >/dev/null && command -v munged >/dev/null || { \
		echo "slurm-check: installing slurm-wlm and munge (Debian)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -q slurm-wlm munge >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y -q slurm-wlm munge >/dev/null; }; }
	@test -x $(TEST_BIN) || $(CARGO) build --profile $(TEST_PROFILE) -p ctxbench
	CTXBENCH_BIN=$(abspath $(TEST_BIN)) scripts/slurm-check.sh

bench: bench-score bench-decode bench-overhead

bench-score:
	$(CARGO) bench -p ctxbench --bench score

## Decoding frames/s with 1 and 2 threads (criterion, quick ATCO2-1h).
bench-decode:
	$(CARGO) bench -p ctxbench --bench decode

## What the arc booster, the phrase automaton and lattice biasing add to decoding time
## (interleaved rounds, on-CPU time; ROUNDS=N, default 15).
bench-overhead:
	$(CARGO) bench -p ctxbench --bench overhead

## What 1,000 to 20,000 phrases per stream add to the CTC WFST search per frame: word and
## phrase boosting on Earnings-21's TLG (interleaved rounds, on-CPU time; ROUNDS=N, UTTS=N).
bench-scale:
	$(CARGO) bench -p ctxbench --bench scale

# The same variants counted in instructions under callgrind (needs valgrind; ~2 min each).
bench-overhead-instructions:
	scripts/overhead_instructions.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean

## The README's LM figure: an Earnings-22 trigram (from the shipped text) scored on five
## Earnings-21 calls.
lm-earnings22: build
	@mkdir -p results/lm-earnings22
	python3 scripts/nlp_sentences.py $(wordlist 1,5,$(sort $(wildcard $(E21)/*.nlp.gz))) > results/lm-earnings22/test.txt.tmp
	mv results/lm-earnings22/test.txt.tmp results/lm-earnings22/test.txt
	$(BIN) lm train --text datasets/earnings22/lm_text.txt.gz --order 3 --out results/lm-earnings22/lm.arpa.gz
	$(BIN) lm ppl --lm results/lm-earnings22/lm.arpa.gz --text results/lm-earnings22/test.txt

## The README's graph table: every dataset graph built once (sizes, seconds, peak memory).
graph-sizes: build
	scripts/graph_sizes.sh

## The README's dataset table.
data-stats: build
	for d in earnings21 atco2-sim-4h atco2-sim-1h; do $(BIN) data stats $$d; echo; done

## Peer check of the ARPA writer and queries: KenLM (PyPI, in .venv-peers) scores the same text with
## the model of lm-earnings22. Comparison only; nothing else depends on it.
peer-kenlm: lm-earnings22
	test -x .venv-peers/bin/python || python3 -m venv .venv-peers
	.venv-peers/bin/pip install -q kenlm
	.venv-peers/bin/python scripts/kenlm_check.py results/lm-earnings22/lm.arpa.gz results/lm-earnings22/test.txt

## 001's CPU comparison: ctxbench's CTC WFST decoder against flashlight-text (LexiconDecoder +
## KenLM) and pyctcdecode (hotwords) on identical exported inputs, one core each (PyPI, in
## .venv-peers); results/peers-ctc/. Comparison only; nothing else depends on it.
peers-ctc: build
	scripts/peers_ctc.sh

## Issue 70: Kaldi's FasterDecoder (PyPI kaldi-decoder, .venv-peers) on the exported ATCO2-1h CTC
## set beside `ctxbench decode` at its defaults (a CTC model decoded whole): the 1-best word
## sequences compared utterance by utterance (results/peers-ctc/kaldi-faster-decoder.txt).
## FasterDecoder's min_active 20 keeps tokens past the beam; ours has none, so both runs are
## written: min-active 0 must be identical on every utterance (the make target fails otherwise).
peer-kaldi-ctc: build
	test -x .venv-peers/bin/python || python3 -m venv .venv-peers
	.venv-peers/bin/python -c "import kaldi_decoder, kaldifst, numpy" 2>/dev/null || \
		.venv-peers/bin/pip install -q kaldi-decoder kaldifst numpy || \
		{ echo "peer-kaldi-ctc: kaldi-decoder is not installable here; skipped"; exit 0; }
	test -f cache/peers-kaldi/atco2-sim-1h/graph/TLG.fst || { rm -rf cache/peers-kaldi/atco2-sim-1h.tmp && \
		$(BIN) export --dataset atco2-sim-1h --kind tlg-normal --format npy \
		--out cache/peers-kaldi/atco2-sim-1h.tmp && mv cache/peers-kaldi/atco2-sim-1h.tmp cache/peers-kaldi/atco2-sim-1h; }
	$(BIN) decode --registry cache/peers-kaldi/atco2-sim-1h/datasets.toml \
		--dataset atco2-sim-1h-files --beam 15 --max-active 7000 --threads 1 --methods none \
		--hyp-dir cache/peers-kaldi/ours
	mkdir -p results/peers-ctc
	{ .venv-peers/bin/python scripts/peer_kaldi_decoder.py cache/peers-kaldi/atco2-sim-1h \
		cache/peers-kaldi/ours/none.txt --min-active 20 || true; \
	  .venv-peers/bin/python scripts/peer_kaldi_decoder.py cache/peers-kaldi/atco2-sim-1h \
		cache/peers-kaldi/ours/none.txt --min-active 0; } > results/peers-ctc/kaldi-faster-decoder.txt.tmp
	mv results/peers-ctc/kaldi-faster-decoder.txt.tmp results/peers-ctc/kaldi-faster-decoder.txt
	cat results/peers-ctc/kaldi-faster-decoder.txt

## Every peer comparison.
peers: peer-kenlm peers-ctc peer-ngpu-lm peers-python peer-kaldi-ctc

## Issue 56: the Python API (release wheel) beside pyctcdecode + KenLM (PyPI, .venv-peers) and
## beside the CLI on the exported ATCO2-1h set: results/python/table.md.
peers-python: build
	test -x .venv-peers/bin/python || python3 -m venv .venv-peers
	.venv-peers/bin/python -c "import pyctcdecode, kenlm, numpy" 2>/dev/null || \
		.venv-peers/bin/pip install -q kenlm pyctcdecode numpy
	PY_PROFILE=release $(MAKE) --no-print-directory python
	.venv-peers/bin/pip install -q --force-reinstall --no-deps $(PY_WHEELS)/ctxbench-*.whl
	test -f cache/python-bench/atco2-sim-1h/lm/G.arpa || { rm -rf cache/python-bench/atco2-sim-1h.tmp && \
		target/release/ctxbench export --dataset atco2-sim-1h --kind tlg-normal --format npy --with-lm \
		--out cache/python-bench/atco2-sim-1h.tmp && mv cache/python-bench/atco2-sim-1h.tmp cache/python-bench/atco2-sim-1h; }
	mkdir -p results/python
	.venv-peers/bin/python scripts/python_vs_pyctcdecode.py cache/python-bench/atco2-sim-1h target/release/ctxbench > results/python/run.md.tmp
	mv results/python/run.md.tmp results/python/run.md
	cat results/python/run.md

## 004's query speed: NGPU-LM arrays (batched full-vocabulary queries) against per-token back-off
## queries, ours and KenLM's Python module (.venv-peers), on the Earnings-22 trigram of
## lm-earnings22; results/peers-ngpu-lm/. Comparison only; nothing else depends on it.
peer-ngpu-lm: lm-earnings22
	test -x .venv-peers/bin/python || python3 -m venv .venv-peers
	.venv-peers/bin/python -c "import kenlm" 2>/dev/null || .venv-peers/bin/pip install -q kenlm
	@mkdir -p results/peers-ngpu-lm
	$(BIN) lm arrays --lm results/lm-earnings22/lm.arpa.gz --json results/peers-ngpu-lm/arrays.json \
		> results/peers-ngpu-lm/arrays.txt.tmp
	.venv-peers/bin/python scripts/kenlm_query_peer.py results/lm-earnings22/lm.arpa.gz \
		>> results/peers-ngpu-lm/arrays.txt.tmp
	mv results/peers-ngpu-lm/arrays.txt.tmp results/peers-ngpu-lm/arrays.txt
	cat results/peers-ngpu-lm/arrays.txt

## 004's derived figures (WERR, gap recovered, fusion overhead) from results/bataev-table1/ and
## results/bataev-table2/ (run the experiments first: `ctxbench run experiments/bataev-table1.toml`).
bataev-derived:
	@for t in bataev-table1 bataev-table2; do \
		if [ -f results/$$t/points.csv ]; then \
			python3 scripts/bataev_derived.py results/$$t/points.csv > results/$$t/derived.md.tmp && \
			mv results/$$t/derived.md.tmp results/$$t/derived.md && echo "== $$t" && cat results/$$t/derived.md; \
		fi; \
	done
