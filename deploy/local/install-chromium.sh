#!/usr/bin/env bash
# install-chromium.sh: idempotently installs the Debian "chromium" package
# (headless browser for the login end-to-end tests) and prints its path.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ ! -x "$CHROMIUM" ]; then
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then
		SUDO="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq >&2
	$SUDO apt-get install -y -qq --no-install-recommends chromium >&2
fi

if [ ! -x "$CHROMIUM" ]; then
	echo "install-chromium.sh: $CHROMIUM missing after install" >&2
	exit 1
fi
echo "$CHROMIUM"
