#!/usr/bin/env bash
# The real-audio graph settings swept on the committed sets (issue 55): phone context
# (cross-word, word-internal) × language weight (LWS, default 6.5 7.5 8.5 9.5 10.5) × fillers
# (pocketsphinx's 1e-8, none) on SETS (default pocketsphinx-test atco2-tts-1h; add
# pocketsphinx-test-en-us after `make lm-en-us` for the general-English bigram), each a copy of
# the entry in a registry written under cache/context-sweep/ (absolute paths), decoded with
# `ctxbench decode`, one thread. Prints one line per setting: set, context, lw, filler prob,
# WER, NE-WER.
#
#   [SETS="..."] [LWS="..."] scripts/real_context_sweep.sh [path/to/ctxbench]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/ctxbench}
OUT=cache/context-sweep
mkdir -p "$OUT"
ROOT=$(pwd)
# Paths a built-in entry resolves beside its registry (the pronouncer's dictionary).
ln -sfn "$ROOT/datasets" "$OUT/datasets"
REG="$OUT/datasets.toml"
SETS=${SETS:-pocketsphinx-test atco2-tts-1h}
LWS=${LWS:-6.5 7.5 8.5 9.5 10.5}
sed -E "s#= \"(datasets|cache)/#= \"$ROOT/\\1/#" datasets.toml > "$REG.tmp"
entry() { # the body of [NAME] in datasets.toml, paths made absolute
	awk -v name="[$1]" '$0 == name {on=1; next} /^\[/ {on=0} on' "$REG.tmp"
}
for set in $SETS; do
	for ctx in cross-word word-internal; do
		for lw in $LWS; do
			for fill in 1e-8 0; do
				name="$set-$ctx-lw${lw/./}-f${fill/-/}"
				{
					echo "[$name]"
					entry "$set" | grep -vE '^(phone_context|language_weight|filler_prob) '
					echo "phone_context = \"$ctx\""
					echo "language_weight = $lw"
					echo "filler_prob = $fill"
					echo
				} >> "$REG.tmp"
			done
		done
	done
done
mv "$REG.tmp" "$REG"
for set in $SETS; do
	for ctx in cross-word word-internal; do
		for lw in $LWS; do
			for fill in 1e-8 0; do
				name="$set-$ctx-lw${lw/./}-f${fill/-/}"
				row=$("$BIN" decode --registry "$REG" --dataset "$name" --methods none --threads 1 2>/dev/null |
					grep '^| none')
				echo "$set $ctx lw=$lw filler_prob=$fill WER/NE-WER: $(echo "$row" | cut -d'|' -f5,6)"
			done
		done
	done
done
