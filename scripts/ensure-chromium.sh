#!/usr/bin/env bash
# Before `npm test`: installs Debian's Chromium for the browser tests (test/browser, the CORS test)
# when /usr/bin/chromium is missing and the machine lets us (root or sudo). Without it those tests
# skip, except under CI=true, where they fail.
set -uo pipefail
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo"; else
  echo "ensure-chromium: /usr/bin/chromium is missing and packages cannot be installed here; browser tests will skip" >&2
  exit 0
fi
echo "ensure-chromium: installing Debian's chromium for the browser tests" >&2
$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null \
  || echo "ensure-chromium: the install failed; browser tests will skip (and fail under CI=true)" >&2
exit 0
