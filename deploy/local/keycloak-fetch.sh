#!/usr/bin/env bash
# keycloak-fetch.sh: fetch Keycloak's distribution (keycloak-quarkus-dist,
# pinned) from Maven Central once, check its SHA-1 against the one Maven
# Central publishes, unpack it into
#
#   ${GATEHOUSE_CACHE:-$HOME/.cache/gatehouse}/keycloak-<version>
#
# and print that directory on stdout (and nothing else). Idempotent
# (.complete) and safe to run concurrently (flock). Used by the Keycloak
# end-to-end test (auth/keycloak_test.go); it runs on the machine's Java 17.
set -euo pipefail

KEYCLOAK_VERSION="${KEYCLOAK_VERSION:-26.4.5}"
cache_root="${GATEHOUSE_CACHE:-${HOME}/.cache/gatehouse}"
dir="${cache_root}/keycloak-${KEYCLOAK_VERSION}"
if [[ -f "${dir}/.complete" ]]; then
	echo "${dir}"
	exit 0
fi
mkdir -p "${cache_root}"
exec 9>"${cache_root}/keycloak-${KEYCLOAK_VERSION}.lock"
flock 9
if [[ -f "${dir}/.complete" ]]; then
	echo "${dir}"
	exit 0
fi
url="https://repo1.maven.org/maven2/org/keycloak/keycloak-quarkus-dist/${KEYCLOAK_VERSION}/keycloak-quarkus-dist-${KEYCLOAK_VERSION}.tar.gz"
tmp="$(mktemp -d "${cache_root}/keycloak-fetch.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
curl -sfSL --retry 3 -o "${tmp}/kc.tar.gz" "${url}" || { echo "keycloak-fetch: cannot download ${url}" >&2; exit 1; }
want="$(curl -sfSL --retry 3 "${url}.sha1" | cut -c1-40)"
got="$(sha1sum "${tmp}/kc.tar.gz" | cut -c1-40)"
[[ -n "${want}" && "${want}" == "${got}" ]] || { echo "keycloak-fetch: SHA-1 mismatch for ${url} (want ${want}, got ${got})" >&2; exit 1; }
tar xzf "${tmp}/kc.tar.gz" -C "${tmp}"
rm -rf "${dir}"
mv "${tmp}/keycloak-${KEYCLOAK_VERSION}" "${dir}"
touch "${dir}/.complete"
echo "${dir}"
