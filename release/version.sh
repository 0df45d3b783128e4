#!/bin/sh
# Prints the version to stamp into a build: the release tag when HEAD is
# tagged (v0.2.0), `git describe` after a tag (v0.2.0-3-g1a2b3c4d5e6f), or a
# Go pseudo-version before the first tag (v0.0.0-20261125185645-1a2b3c4d5e6f);
# "-dirty" is appended when tracked files differ from HEAD. Outside a git
# checkout it prints "devel".
cd "$(dirname "$0")/.." || exit 1
if ! git rev-parse --verify -q HEAD >/dev/null 2>&1; then
	echo devel
	exit 0
fi
dirty=
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	dirty=-dirty
fi
if v=$(git describe --tags --match 'v[0-9]*' --abbrev=12 2>/dev/null); then
	echo "$v$dirty"
else
	echo "v0.0.0-$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)-$(git rev-parse --short=12 HEAD)$dirty"
fi
