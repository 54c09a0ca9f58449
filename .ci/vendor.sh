#!/usr/bin/env bash
# Fetch the browser assets the offline book serves itself (from the npm registry, not committed):
# MathJax 3, require.js and the Jupyter widgets HTML manager.  Usage: .ci/vendor.sh _vendor
set -euo pipefail
out=${1:-_vendor}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent mathjax@3.2.2 requirejs@2.3.8 @jupyter-widgets/html-manager@1.0.15 >/dev/null)
rm -rf "$out" && mkdir -p "$out/mathjax" "$out/widgets"
for t in "$tmp"/*.tgz; do mkdir -p "$tmp/x" && tar xzf "$t" -C "$tmp/x" && mv "$tmp/x/package" "$tmp/$(basename "$t" .tgz)"; done
cp -r "$tmp"/mathjax-*/es5/. "$out/mathjax/"
cp "$tmp"/requirejs-*/require.js "$out/require.js"
cp "$tmp"/jupyter-widgets-html-manager-*/dist/*.js "$out/widgets/"
echo "vendored into $out: $(du -sh "$out" | cut -f1)"
