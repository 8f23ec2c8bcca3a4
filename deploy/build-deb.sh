#!/usr/bin/env bash
# Builds the Debian package pacer_<version>_<arch>.deb: the binary (release, with the Swift
# runtime linked in: --static-swift-stdlib, so the machine needs no Swift), the systemd unit,
# the default configuration, the wall-clock dashboard, the mosquitto examples and the
# installer's broker setup (/usr/share/pacer/install.sh --broker-only).
#
#   deploy/build-deb.sh                       build (release) and package
#   deploy/build-deb.sh --binary PATH         package this binary instead of building
#   deploy/build-deb.sh --out DIR             where the .deb goes (default: the current directory)
#   deploy/build-deb.sh --version V           the version (default: what `pacer --version` says)
#
# Install with `sudo apt install ./pacer_<version>_<arch>.deb` (apt pulls the dependencies);
# remove with `sudo apt remove pacer`, or `sudo apt purge pacer` to delete the configuration,
# the database and the `pacer` user too. To package for a Pi on another machine, build the
# binary there (aarch64) and give it with --binary; the architecture is read from the binary.
set -euo pipefail

die() { echo "build-deb.sh: error: $*" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
binary='' out=$PWD version=''
while (($#)); do
  case $1 in
    --binary) binary=${2:?--binary needs a path}; shift ;;
    --binary=*) binary=${1#*=} ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    --out=*) out=${1#*=} ;;
    --version) version=${2:?--version needs a value}; shift ;;
    --version=*) version=${1#*=} ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
command -v dpkg-deb >/dev/null || die "dpkg-deb is missing (apt install dpkg)"
[[ -d $out ]] || die "--out $out: no such directory"

if [[ -z $binary ]]; then
  command -v swift >/dev/null || PATH=/opt/swift/usr/bin:$PATH
  command -v swift >/dev/null || die "swift is not on PATH (or give a binary with --binary)"
  echo "build-deb.sh: building (release, --static-swift-stdlib)…" >&2
  swift build --package-path "$repo" -c release --product pacer --static-swift-stdlib >&2
  binary=$(swift build --package-path "$repo" -c release --show-bin-path)/pacer
fi
[[ -f $binary && -x $binary ]] || die "$binary: not an executable file"

# The architecture from the ELF header (e_machine at byte 18), so a binary built for a Pi
# on another machine is packaged as arm64.
[[ $(head -c 4 "$binary" | od -An -c | tr -d ' ') == '177ELF' ]] || die "$binary is not an ELF binary"
machine=$(od -An -t u2 -j 18 -N 2 "$binary" | tr -d ' ')
case $machine in
  62) arch=amd64 ;;
  183) arch=arm64 ;;
  40) arch=armhf ;;
  *) die "$binary: unknown machine type $machine" ;;
esac
if [[ -z $version ]]; then
  version=$("$binary" --version 2>/dev/null) || die "cannot run $binary here to ask its version: give --version"
fi
[[ $version =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "'$version' is not a Debian version"

stage=$(mktemp -d "${TMPDIR:-/tmp}/pacer-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
pkg=$stage/pkg
install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/lib/systemd/system" "$pkg/etc/pacer" \
  "$pkg/usr/share/pacer/dashboard" "$pkg/usr/share/pacer/mosquitto" "$pkg/usr/share/pacer/lighttpd" "$pkg/usr/share/doc/pacer"

install -m 0755 "$binary" "$pkg/usr/bin/pacer"
strip_bin=$(command -v strip || true)
# Debug information is most of the binary's size (binutils' strip; skipped when missing).
if [[ -n $strip_bin ]]; then "$strip_bin" --strip-unneeded "$pkg/usr/bin/pacer"; fi
sed 's#/usr/local/bin/pacer#/usr/bin/pacer#g' "$here/pacer.service" > "$pkg/lib/systemd/system/pacer.service"
chmod 0644 "$pkg/lib/systemd/system/pacer.service"
install -m 0644 "$here/pacer.yaml" "$pkg/etc/pacer/pacer.yaml"
install -m 0755 "$here/install.sh" "$pkg/usr/share/pacer/install.sh"
# The page's web server and its certificates, for install.sh --broker-only.
install -m 0755 "$here/make-cert.sh" "$pkg/usr/share/pacer/make-cert.sh"
for f in pacer.conf pacer-https.conf lighttpd.service.d-pacer.conf; do
  install -m 0644 "$here/lighttpd/$f" "$pkg/usr/share/pacer/lighttpd/$f"
done
# The unit's drop-in that opens the sound devices: installed by postinst (install.sh --sound-only)
# when the configuration plays its cues on a device.
install -m 0644 "$here/pacer-sound.conf" "$pkg/usr/share/pacer/pacer-sound.conf"
# The spoken cues' phrase tables, one per language (docs/sound.md, "Speech").
install -d -m 0755 "$pkg/usr/share/pacer/phrases"
for f in "$repo"/share/phrases/*.json; do install -m 0644 "$f" "$pkg/usr/share/pacer/phrases/"; done
# journald's settings for an SD card: not applied by the package (docs/deployment.md says how).
install -m 0644 "$here/journald-pacer.conf" "$pkg/usr/share/pacer/journald-pacer.conf"
for f in pacer.conf acl.example bridge.example.conf; do
  install -m 0644 "$here/mosquitto/$f" "$pkg/usr/share/pacer/mosquitto/$f"
done
# The page on mosquitto's WebSocket port that sends old :9001 addresses on to lighttpd
# (pacer.conf's http_dir).
install -D -m 0644 "$here/mosquitto/moved/index.html" "$pkg/usr/share/pacer/moved/index.html"
if [[ -d $repo/examples/dashboard ]] && [[ -n $(ls -A "$repo/examples/dashboard") ]]; then
  cp -R --no-preserve=ownership "$repo/examples/dashboard/." "$pkg/usr/share/pacer/dashboard/"
else
  echo "build-deb.sh: warning: no examples/dashboard/: the package has an empty dashboard folder" >&2
fi
for f in README.md CHANGELOG.md docs/deployment.md docs/configuration.md docs/API.md; do
  [[ -f $repo/$f ]] && install -m 0644 "$repo/$f" "$pkg/usr/share/doc/pacer/$(basename "$f")"
done
cat > "$pkg/usr/share/doc/pacer/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pacer
Comment: A headless MQTT timer node. The binary links the Swift runtime and the Swift
 packages named in Package.swift statically (Apache-2.0 with Runtime Library Exception).

Files: *
License: Apache-2.0
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0 (and in the source's LICENSE file).
EOF
find "$pkg" -type d -exec chmod 0755 {} +
find "$pkg/usr/share" -type f -exec chmod go+r {} +

installed_kb=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat > "$pkg/DEBIAN/control" <<EOF
Package: pacer
Version: $version
Architecture: $arch
Maintainer: Pacer <pacer@localhost>
Section: misc
Priority: optional
Installed-Size: $installed_kb
Depends: libmosquitto1, libsqlite3-0, libasound2, libc6, libstdc++6, libgcc-s1, passwd
Recommends: mosquitto, lighttpd, lighttpd-mod-openssl, openssl, espeak-ng
Suggests: sqlite3, mosquitto-clients
Description: headless MQTT timer node for gyms and homes
 Pacer runs interval, rest, countdown and stopwatch timers, publishes their state
 as retained MQTT topics and takes commands on MQTT topics. Wall displays, phones
 and Home Assistant subscribe; everything is kept in SQLite across restarts.
 .
 The package installs the service (enabled and started where systemd runs), a
 default configuration in /etc/pacer/pacer.yaml and the wall-clock dashboard in
 /usr/share/pacer/dashboard. To let the gym's network in (the broker's WebSocket
 listener, passwords, ACL; lighttpd serving the page over HTTP and HTTPS with a
 local certificate authority): sudo /usr/share/pacer/install.sh --broker-only
EOF
echo /etc/pacer/pacer.yaml > "$pkg/DEBIAN/conffiles"

# Maintainer scripts. The service is enabled with deb-systemd-helper (init-system-helpers,
# essential), which works without systemd running; starting and stopping only where it runs.
cat > "$pkg/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    if ! getent passwd pacer >/dev/null; then
        useradd --system --user-group --home-dir /var/lib/pacer --no-create-home \
            --shell /usr/sbin/nologin --comment "Pacer timer node" pacer
    fi
    install -d -m 0750 -o pacer -g pacer /var/lib/pacer
    # The unit keeps the devices closed: when /etc/pacer/pacer.yaml plays its cues on a device,
    # the drop-in that opens the sound devices (kept once installed; removed by purge).
    /usr/share/pacer/install.sh --sound-only || echo "pacer: the sound drop-in was not set up (sudo /usr/share/pacer/install.sh --sound-only --sound)"
fi
if [ "$1" = configure ] || [ "$1" = abort-upgrade ] || [ "$1" = abort-deconfigure ] || [ "$1" = abort-remove ]; then
    deb-systemd-helper unmask pacer.service >/dev/null || true
    if deb-systemd-helper --quiet was-enabled pacer.service; then
        deb-systemd-helper enable pacer.service >/dev/null || true
    else
        deb-systemd-helper update-state pacer.service >/dev/null || true
    fi
    if [ -d /run/systemd/system ]; then
        systemctl --system daemon-reload >/dev/null || true
        deb-systemd-invoke restart pacer.service >/dev/null || true
    else
        echo "pacer: systemd is not running here; the service is enabled and starts at the next boot"
    fi
fi
exit 0
EOF
cat > "$pkg/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    deb-systemd-invoke stop pacer.service >/dev/null || true
fi
exit 0
EOF
cat > "$pkg/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = remove ] && [ -x /usr/bin/deb-systemd-helper ]; then
    deb-systemd-helper mask pacer.service >/dev/null || true
fi
# The broker setup of install.sh --broker-only serves /usr/share/pacer/dashboard, which is
# gone now: mosquitto would not start with it. Set it aside (include_dir reads *.conf only).
if [ "$1" = remove ] && [ -f /etc/mosquitto/conf.d/pacer.conf ]; then
    mv /etc/mosquitto/conf.d/pacer.conf /etc/mosquitto/conf.d/pacer.conf.removed
    echo "pacer: set /etc/mosquitto/conf.d/pacer.conf aside as pacer.conf.removed"
    if [ -d /run/systemd/system ]; then systemctl try-restart mosquitto.service || true; fi
fi
if [ "$1" = purge ]; then
    if [ -x /usr/bin/deb-systemd-helper ]; then
        deb-systemd-helper purge pacer.service >/dev/null || true
        deb-systemd-helper unmask pacer.service >/dev/null || true
    fi
    # The configuration written by install.sh --broker-only, the database, the user.
    rm -f /etc/pacer/pacer.env /etc/pacer/mqtt-password /etc/pacer/pacer.yaml.dist /etc/pacer/.defaults.sha256
    rm -rf /etc/pacer/tls
    # The sound drop-in of postinst or install.sh --sound-only (an override of the owner's stays).
    rm -f /etc/systemd/system/pacer.service.d/sound.conf
    rmdir /etc/systemd/system/pacer.service.d 2>/dev/null || true
    rmdir /etc/pacer 2>/dev/null || true
    # lighttpd back to Debian's own configuration.
    if [ -f /etc/systemd/system/lighttpd.service.d/pacer.conf ]; then
        rm -f /etc/systemd/system/lighttpd.service.d/pacer.conf /etc/lighttpd/pacer.conf /etc/lighttpd/pacer.conf.dist
        rmdir /etc/systemd/system/lighttpd.service.d 2>/dev/null || true
        if [ -d /run/systemd/system ]; then
            systemctl --system daemon-reload >/dev/null || true
            systemctl try-restart lighttpd.service || true
        fi
    fi
    rm -rf /var/lib/pacer /var/lib/private/pacer
    rm -f /etc/mosquitto/conf.d/pacer.conf.removed /etc/mosquitto/conf.d/pacer.conf.dist \
        /etc/mosquitto/pacer.acl /etc/mosquitto/pacer.acl.dist
    if [ -f /etc/mosquitto/passwd ] && grep -q '^pacer:' /etc/mosquitto/passwd && command -v mosquitto_passwd >/dev/null; then
        mosquitto_passwd -D /etc/mosquitto/passwd pacer || true
    fi
    if getent passwd pacer >/dev/null; then userdel pacer >/dev/null 2>&1 || true; fi
    if getent group pacer >/dev/null; then groupdel pacer >/dev/null 2>&1 || true; fi
fi
exit 0
EOF
chmod 0755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/prerm" "$pkg/DEBIAN/postrm"

deb=$out/pacer_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
