#!/bin/sh
# Turn the runtime stage's root filesystem into a distroless-style one: what syncer runs (python,
# git, ssh, a shell and coreutils) and nothing else. The Dockerfile copies the result into an
# empty image, so what is removed here is really gone (not hidden under a later layer).
#
# Packages are purged through dpkg, so its database -- what image scanners read -- stays true:
#   perl, libperl, perl-modules, liberror-perl  only git's perl-scripted commands (send-email,
#                                               svn, cvsimport, ...) use perl; git's core is C
#   apt, libapt-pkg, debconf, perl-base          no package manager in the final image
#   tzdata                                       syncer works in UTC only
#   e2fsprogs, logsave, libext2fs2, libss2       file-system tools, of no use in a container
#   libsqlite3-0                                 only Python's sqlite3 module uses it (removed too)
# Files no package manager will ever look at again:
#   documentation, man pages, translations; glibc's iconv modules (gconv); pip's bundled wheels;
#   git's server and mail programs (daemon, http-backend, shell, imap-send, http-push, scalar);
#   the parts of Python's standard library that are development tools (lib2to3, distutils,
#   pydoc_data, the test package, ensurepip, idlelib, tkinter, the _test* extensions) and sqlite3.
set -eu

installed() {
  dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null | awk '$1 == "ii" { print $2 }' || true
}

purge="$(installed 'perl' 'libperl5*' 'perl-modules-*' 'liberror-perl' 'tzdata' 'e2fsprogs' 'logsave' 'libext2fs2*' \
  'libss2*' 'libsqlite3-0*' 'apt' 'libapt-pkg*' 'debconf' 'perl-base')"
if [ -n "$purge" ]; then
  # shellcheck disable=SC2086  # one word per package
  # dpkg warns about every forced removal; those warnings are the plan, so they are shown only
  # when the purge fails.
  dpkg --purge --force-depends --force-remove-essential --force-remove-protected $purge >/tmp/purge.log 2>&1 \
    || { cat /tmp/purge.log >&2; exit 1; }
  rm -f /tmp/purge.log
fi

rm -rf /var/lib/apt /var/cache/apt /var/cache/debconf /var/cache/ldconfig/aux-cache /var/log/* \
  /usr/share/doc /usr/share/man /usr/share/info /usr/share/locale /usr/share/lintian /usr/share/zoneinfo \
  /usr/share/python-wheels /usr/lib/*-linux-gnu/gconv /etc/apt

git_core="$(git --exec-path)"
for program in git-daemon git-http-backend git-shell git-imap-send git-http-push scalar; do
  rm -f "$git_core/$program" "/usr/bin/$program"
done
# Debian ships the git binary twice (/usr/bin and the exec path): keep one, link the other.
if [ -f "$git_core/git" ] && [ ! -L "$git_core/git" ] && cmp -s "$git_core/git" "$(command -v git)"; then
  ln -sf "$(command -v git)" "$git_core/git"
fi

stdlib="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')"
rm -rf "$stdlib/lib2to3" "$stdlib/distutils" "$stdlib/pydoc_data" "$stdlib/test" "$stdlib/ensurepip" \
  "$stdlib/idlelib" "$stdlib/tkinter" "$stdlib/turtledemo" "$stdlib/sqlite3" "$stdlib"/lib-dynload/_sqlite3* \
  "$stdlib"/lib-dynload/_test* "$stdlib"/lib-dynload/xxlimited* "$stdlib"/lib-dynload/_xxtestfuzz*
find "$stdlib" -depth -name __pycache__ -type d -empty -delete
