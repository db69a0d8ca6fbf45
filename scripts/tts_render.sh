#!/usr/bin/env bash
# Renders a Kaldi `text` file (utt words...) as 16 kHz mono WAVs with Festival (issue 41):
# <out>/<utt>.wav, plus <out>/RENDER.txt recording the voice, Festival's version and the text
# each file was rendered from. Tokens are read as the project writes them: `k_l_m` (a spelled
# code) is said letter by letter. Rendering is deterministic (HTS voice, no random state);
# existing WAVs whose recorded text matches are kept.
#   scripts/tts_render.sh <text> <out dir> [voice, default cmu_us_slt_arctic_hts]
set -euo pipefail
text=$1 out=$2 voice=${3:-cmu_us_slt_arctic_hts}
command -v text2wave >/dev/null || { echo "tts_render: text2wave (Debian festival) is missing; make tts-install" >&2; exit 1; }
mkdir -p "$out"
version=$(festival --version 2>&1 | head -1)
log="$out/RENDER.txt"
touch "$log"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
n=0
while read -r utt words; do
  [ -n "$utt" ] || continue
  said=$(echo "$words" | sed -E 's/([a-z])_/\1 /g' | tr '-' ' ')
  line="$utt	$voice	$said"
  if [ -s "$out/$utt.wav" ] && grep -qxF "$line" "$log"; then continue; fi
  echo "$said" > "$tmp"
  text2wave -F 16000 -eval "(voice_$voice)" -o "$out/$utt.wav" "$tmp" 2>/dev/null \
    || { echo "tts_render: Festival failed on $utt ($said)" >&2; exit 1; }
  grep -v "^$utt	" "$log" > "$log.new" || true
  echo "$line" >> "$log.new"
  mv "$log.new" "$log"
  n=$((n + 1))
done < "$text"
sort -o "$log" "$log"
echo "tts_render: $n rendered into $out ($version, voice $voice)"
