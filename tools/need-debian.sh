#!/bin/sh
# Installs the Debian packages whose command or file is missing, in one apt-get run:
#
#   tools/need-debian.sh [--soft "why"] CHECK:PACKAGE...
#
# CHECK is a command name, or an absolute path that the package provides. When something is
# missing and cannot be installed (not root, or no apt-get), it is an error, or with --soft a
# note saying what will not work.
soft=""
if [ "$1" = "--soft" ]; then soft=$2; shift 2; fi
missing=""
for spec in "$@"; do
    check=${spec%%:*}
    case $check in
        /*) [ -e "$check" ] && continue ;;
        *) command -v "$check" >/dev/null 2>&1 && continue ;;
    esac
    missing="$missing ${spec#*:}"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
elif [ -n "$soft" ]; then
    echo "note:$missing not installed and not root: $soft"
else
    echo "error:$missing needed and not installed (not root or no apt-get)" >&2
    exit 1
fi
