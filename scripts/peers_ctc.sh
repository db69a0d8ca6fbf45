#!/usr/bin/env bash
# 001's comparison on identical inputs: ctxbench's CTC WFST decoder against flashlight-text's
# lexicon decoder + KenLM and pyctcdecode (with and without hotwords), one core each, on exported
# log-probs, LM (the ARPA G was built from) and lexicon. Peers come from PyPI into .venv-peers;
# nothing else depends on this. Writes results/peers-ctc/{table.md,*.json,hyp/}.
#
#   scripts/peers_ctc.sh            # ATCO2-1h (all 871 utterances) and 20 Earnings-21 calls
#   PEERS_E21_LIMIT=5 scripts/peers_ctc.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/ctxbench}
PY=.venv-peers/bin/python
OUT=results/peers-ctc
WORK=${PEERS_WORK:-cache/peers-ctc}
E21_LIMIT=${PEERS_E21_LIMIT:-20}
BEAM=15
BOOST=6
OPEN_WEIGHT=5
OPEN_ENTRY=4
OPEN_MAX_PAUSE=1.0

test -x "$PY" || python3 -m venv .venv-peers
"$PY" -c "import flashlight.lib.text, pyctcdecode, kenlm" 2>/dev/null ||
	.venv-peers/bin/pip install -q kenlm flashlight-text pyctcdecode
mkdir -p "$OUT.tmp/hyp"

run() { # dataset limit-args
	local ds=$1; shift
	local ex="$WORK/$ds"
	if [ ! -f "$ex/lm/G.arpa" ]; then
		"$BIN" export --dataset "$ds" "$@" --kind tlg-normal --format npy --with-lm --out "$ex.tmp"
		rm -rf "$ex" && mv "$ex.tmp" "$ex"
	fi
	local reg="$ex/datasets.toml" name="$ds-files" h="$OUT.tmp/hyp/$ds"
	mkdir -p "$h"
	# Ours: one thread, whole utterances, the normal topology, the compact one (same scores and
	# data, its own graph) and word boosting with each utterance's list.
	[ -f "$ex/compact/TLG.fst" ] || "$BIN" graph export --dataset "$ds" --kind tlg-compact --out "$ex/compact"
	"$BIN" decode --scores "$ex/scores" --graph "$ex/compact/TLG.fst" --words "$ex/compact/words.txt" \
		--data "$ex/data" --model ctc --tokens "$ex/compact/tokens.txt" --entities "$ex/entities.txt" \
		--acoustic-scale "$(sed -n 's/^acoustic_scale = //p' "$reg")" --threads 1 --no-endpointing --beam $BEAM --methods none \
		--hyp-dir "$h/ours-compact" --json "$h/ours-compact.json"
	"$BIN" decode --registry "$reg" --dataset "$name" --threads 1 --no-endpointing --beam $BEAM \
		--methods none --hyp-dir "$h/ours-normal" --json "$h/ours-normal.json"
	"$BIN" decode --registry "$reg" --dataset "$name" --threads 1 --no-endpointing --beam $BEAM \
		--methods none --word-boost sequences --word-boost-score $BOOST \
		--hyp-dir "$h/ours-normal-boost" --json "$h/ours-normal-boost.json"
	# Open-vocabulary contexts (issue 42): each utterance's list compiled at run time over the
	# BPE pieces and entered through the TLG's class slot, so names the graph lacks are decoded.
	# The simulated dataset itself (the export's log-probs are its scores; the slot TLG is built
	# from the same LM); context compilation counts in its RTFx.
	"$BIN" decode --dataset "$ds" "$@" --kind tlg-normal --threads 1 --no-endpointing --beam $BEAM \
		--methods none --method ctc-wfst --open-vocab sequences \
		--open-vocab-weight $OPEN_WEIGHT --open-vocab-entry $OPEN_ENTRY \
		--open-vocab-max-pause $OPEN_MAX_PAUSE \
		--hyp-dir "$h/ours-normal-open" --json "$h/ours-normal-open.json"
	"$PY" scripts/peers_ctc.py "$ex" "$h" --beam $BEAM --hotword-boost $BOOST
	rm -f "$h"/ours-*/none.ctm
	for hyp in "$h"/ours-*/none.txt "$h"/*.txt; do
		local n
		n=$(basename "$(dirname "$hyp")")
		[ "$n" = "$ds" ] && n=$(basename "$hyp" .txt)
		"$BIN" score --ref "$ex/data/text" --hyp "$hyp" --entities "$ex/entities.txt" \
			--json "$h/$n.score.json" >/dev/null
	done
}

run atco2-sim-1h
run earnings21 --limit "$E21_LIMIT"
"$PY" scripts/peers_ctc_table.py "$OUT.tmp" "$E21_LIMIT" >"$OUT.tmp/table.md"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
cat "$OUT/table.md"
