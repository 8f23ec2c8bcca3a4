#!/usr/bin/env bash
# Installs Pacer on Raspberry Pi OS / Debian bookworm (arm64 or x86-64): the apt packages,
# the binary (built here in release mode, or given with --binary), a default configuration,
# the systemd unit, the wall-clock dashboard served by lighttpd over HTTP and HTTPS (a local
# certificate authority and a certificate for this machine: deploy/make-cert.sh), the mosquitto
# configuration with passwords and ACL, journald's settings for an SD card, a system user and
# the state directory; then enables and starts the services.
# Safe to run again (an upgrade is the same command). See docs/deployment.md.
#
#   sudo deploy/install.sh                      build and install
#   sudo deploy/install.sh --binary ./pacer     install this binary instead of building
#   sudo deploy/install.sh --no-broker          leave mosquitto alone (another broker)
#   sudo deploy/install.sh --no-https           the page over HTTP only (no certificates)
#   sudo deploy/install.sh --no-web             leave lighttpd alone (serve the page yourself)
#   sudo deploy/install.sh --no-journald        leave journald's settings alone
#   sudo deploy/install.sh --sound              open the sound devices to the service (also done
#                                               when the configuration plays cues on a device)
#   sudo deploy/install.sh --broker-only        only the mosquitto, lighttpd and sound parts (after the .deb)
#   sudo deploy/install.sh --sound-only         only the sound drop-in, when the configuration plays
#                                               on a device (with --sound: always); the package's
#                                               postinst runs it, and so can its owner after
#                                               turning sound on
#   sudo deploy/install.sh --uninstall [--purge]
#   deploy/install.sh --dry-run ...             print every step, change nothing
#   deploy/install.sh --root DIR ...            install into DIR (tests; also DESTDIR=DIR)
#
# What it cannot do without systemd as PID 1 (a container, a chroot, --root): enable and
# start the units. It says so and prints the commands to run on the real machine.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() { echo "install.sh: error: $*" >&2; exit 1; }
note() { echo "install.sh: $*"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${DESTDIR:-/}
binary='' dry=false mode=install purge=false broker=true journald=true web=true https=true
sound=auto  # sound: auto (set up when the configuration plays on a device) or yes (--sound)

while (($#)); do
  case $1 in
    --binary) binary=${2:?--binary needs a path}; shift ;;
    --binary=*) binary=${1#*=} ;;
    --root) root=${2:?--root needs a directory}; shift ;;
    --root=*) root=${1#*=} ;;
    --dry-run|-n) dry=true ;;
    --uninstall) mode=uninstall ;;
    --purge) mode=uninstall; purge=true ;;
    --broker-only) mode=broker ;;
    --sound-only) mode=sound ;;
    --no-broker) broker=false ;;
    --no-journald) journald=false ;;
    --no-https) https=false ;;
    --no-web) web=false ;;
    --sound) sound=yes ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done

# R prefixes every path we write ('' for the real system). live: we act on this machine
# (apt, systemctl); with --root only files under R change.
[[ $root == /* ]] || root=$PWD/$root
root=${root%/}
R=$root
live=false
[[ -z $R ]] && live=true
if ! $live && ! $dry && [[ ! -d $R ]]; then die "--root $R: no such directory"; fi
systemd_running=false
[[ -d /run/systemd/system ]] && systemd_running=true
# services: whether this run manages the units (on the machine itself, where systemd runs).
# PACER_INSTALL_TEST_SYSTEMCTL (tests only): a stand-in for systemctl, used even with --root.
systemctl=systemctl
services=false
$live && $systemd_running && services=true
if [[ -n ${PACER_INSTALL_TEST_SYSTEMCTL:-} ]]; then
  systemctl=$PACER_INSTALL_TEST_SYSTEMCTL
  services=true
fi

if ! $dry && [[ $(id -u) -ne 0 ]] && $live; then
  die "run it as root: sudo $0 ${*:-}"
fi

# Every step that changes something goes through run: printed, then done (unless --dry-run).
# changes counts them: services are restarted only when something of theirs changed.
changes=0
run() {
  printf '+ %s\n' "$(printf '%q ' "$@" | sed 's/ $//')"
  changes=$((changes + 1))
  $dry || "$@"
}
step() { echo "== $*"; }

# File locations (the repository's, or the Debian package's when run from /usr/share/pacer).
unit_src=$here/pacer.service
config_src=$here/pacer.yaml
mosq_src=$here/mosquitto
journald_src=$here/journald-pacer.conf
web_src=$here/lighttpd
make_cert=$here/make-cert.sh
dash_src=$here/../examples/dashboard
[[ -d $here/dashboard ]] && dash_src=$here/dashboard
# The spoken cues' phrase tables (one JSON file per language; docs/sound.md, "Speech").
phrases_src=$here/../share/phrases
[[ -d $here/phrases ]] && phrases_src=$here/phrases
docs_src=()
for f in "$here/../README.md" "$here/../docs/deployment.md"; do [[ -f $f ]] && docs_src+=("$f"); done

bin_dst=$R/usr/local/bin/pacer
unit_dst=$R/etc/systemd/system/pacer.service
etc=$R/etc/pacer
state=$R/var/lib/pacer
share=$R/usr/share/pacer
dash_dst=$share/dashboard
phrases_dst=$share/phrases
doc_dst=$R/usr/share/doc/pacer
mosq_conf=$R/etc/mosquitto/conf.d/pacer.conf
mosq_acl=$R/etc/mosquitto/pacer.acl
mosq_passwd=$R/etc/mosquitto/passwd
node_password=$etc/mqtt-password
node_env=$etc/pacer.env
journald_dst=$R/etc/systemd/journald.conf.d/pacer.conf
tls=$etc/tls
web_conf=$R/etc/lighttpd/pacer.conf
web_dropin=$R/etc/systemd/system/lighttpd.service.d/pacer.conf
# The page's ports (lighttpd) and the broker's WebSocket listener it passes /mqtt on to
# (deploy/mosquitto/pacer.conf).
http_port=80 https_port=443 ws_port=9001

# The ids of a user and group in R's /etc/passwd and /etc/group (names would resolve on the
# host, which is not R's).
uid_of() { awk -F: -v n="$1" '$1 == n { print $3 }' "$R/etc/passwd" 2>/dev/null; }
gid_of() { awk -F: -v n="$1" '$1 == n { print $3 }' "$R/etc/group" 2>/dev/null; }
owner() {  # owner USER GROUP -> "uid:gid", or empty when R has no such user
  local u g
  u=$(uid_of "$1"); g=$(gid_of "$2")
  if [[ -n $u && -n $g ]]; then echo "$u:$g"
  elif $dry && $live; then echo "$1:$2"  # created by an earlier step of this run
  fi
}
# fix_attrs MODE OWNER PATH: sets the mode and owner (uid:gid, or '' to leave it) when they differ.
fix_attrs() {
  local mode=$1 own=$2 path=$3
  if $dry && [[ ! -e $path ]]; then
    [[ -n $own ]] && echo "+ chown $own $path"
    return 0
  fi
  [[ $(stat -c %a "$path") == "${mode#0}" ]] || run chmod "$mode" "$path"
  if [[ -n $own && $(stat -c %u:%g "$path") != "$own" ]]; then run chown "$own" "$path"; fi
  return 0
}
# ensure_dir MODE OWNER DIR
ensure_dir() {
  [[ -d $3 ]] || run install -d -m "$1" "$3"
  fix_attrs "$@"
}
# install_file MODE OWNER SRC DST: copies when missing or different.
install_file() {
  local mode=$1 own=$2 src=$3 dst=$4
  if [[ -f $dst ]] && cmp -s "$src" "$dst"; then
    echo "   unchanged: ${dst#"$R"}"
  else
    run install -D -m "$mode" "$src" "$dst"
  fi
  fix_attrs "$mode" "$own" "$dst"
}
# A configuration file the owner may have edited (like dpkg's conffiles): installed when
# missing or still as this script last installed it (an upgrade replaces an untouched
# default); an edited one is kept and the new default is put beside it as NAME.dist.
# The checksums of the defaults installed are kept in /etc/pacer/.defaults.sha256.
sums=$etc/.defaults.sha256
installed_sum() { [[ -f $sums ]] && awk -v f="${1#"$R"}" '$2 == f { print $1 }' "$sums"; return 0; }
record_sum() {
  local dst=$1 sum
  sum=$(sha256sum < "$2" | cut -d' ' -f1)
  [[ $(installed_sum "$dst") == "$sum" ]] && return 0
  echo "+ (record ${dst#"$R"}'s default in ${sums#"$R"})"
  $dry && return 0
  install -d -m 0755 "$etc"
  { [[ -f $sums ]] && awk -v f="${dst#"$R"}" '$2 != f' "$sums"; echo "$sum ${dst#"$R"}"; } > "$sums.new"
  mv "$sums.new" "$sums"
}
forget_sum() {
  [[ -n $(installed_sum "$1") ]] || return 0
  echo "+ (forget ${1#"$R"}'s default in ${sums#"$R"})"
  $dry && return 0
  awk -v f="${1#"$R"}" '$2 != f' "$sums" > "$sums.new"
  mv "$sums.new" "$sums"
}
install_conffile() {
  local mode=$1 own=$2 src=$3 dst=$4
  if [[ -f $dst ]] && ! cmp -s "$src" "$dst" && [[ $(sha256sum < "$dst" | cut -d' ' -f1) != "$(installed_sum "$dst")" ]]; then
    note "kept your ${dst#"$R"}; the new default is ${dst#"$R"}.dist"
    install_file "$mode" "$own" "$src" "$dst.dist"
  else
    install_file "$mode" "$own" "$src" "$dst"
    if [[ -f $dst.dist ]]; then run rm -f "$dst.dist"; fi
    record_sum "$dst" "$src"
  fi
}

check_system() {
  step "checking the system"
  local id='' codename='' arch
  if [[ -r /etc/os-release ]]; then
    id=$(. /etc/os-release && echo "${ID:-}")
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  fi
  arch=$(uname -m)
  echo "   $id $codename on $arch; systemd running: $systemd_running"
  [[ $id == debian || $id == raspbian ]] || note "warning: made for Debian / Raspberry Pi OS, this is '$id'"
  [[ $codename == bookworm ]] || note "warning: tested on bookworm, this is '$codename'"
  [[ $arch == aarch64 || $arch == x86_64 ]] || note "warning: tested on aarch64 and x86_64, this is $arch"
  if $live && dpkg-query -W -f='${Status}' pacer 2>/dev/null | grep -q 'install ok installed'; then
    [[ $mode == broker || $mode == sound ]] || die "the pacer Debian package is installed: upgrade it with apt (sudo apt install ./pacer_*.deb), or remove it first (sudo apt remove pacer). For its broker setup: sudo $0 --broker-only"
  fi
}

apt_packages() {
  # espeak-ng: the spoken cues' always-there voice (sound.speech).
  local wanted=(libmosquitto1 libsqlite3-0 libasound2 sqlite3 espeak-ng)
  $broker && wanted+=(mosquitto mosquitto-clients)
  $web && wanted+=(lighttpd)
  $web && $https && wanted+=(lighttpd-mod-openssl openssl)
  [[ -z $binary && $mode == install ]] && wanted+=(libmosquitto-dev libsqlite3-dev libasound2-dev pkg-config git)
  step "apt packages: ${wanted[*]}"
  if ! $live; then echo "   skipped: installing into $R (apt acts on this machine only)"; return; fi
  local missing=() p
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then echo "   all installed"; return; fi
  run env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build_binary() {
  if [[ -n $binary ]]; then
    [[ -f $binary && -x $binary ]] || die "--binary $binary: not an executable file"
    binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
    return
  fi
  local repo
  repo=$(cd "$here/.." && pwd)
  [[ -f $repo/Package.swift ]] || die "no Package.swift in $repo: give a binary with --binary PATH"
  local swift_bin
  swift_bin=$(command -v swift || true)
  for d in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
    [[ -z $swift_bin && -x $d/swift ]] && swift_bin=$d/swift
  done
  [[ -n $swift_bin ]] || die "Swift is not installed: unpack the toolchain for Debian 12 (aarch64 on a Pi) from https://www.swift.org/install/linux/ to /opt/swift, or give a binary with --binary PATH"
  step "building Pacer (release, static Swift runtime; 10-20 minutes on a Pi 4)"
  # As the owner of the checkout, so that .build/ does not end up root's.
  local as=()
  if [[ $(id -u) -eq 0 && -n ${SUDO_USER:-} && $SUDO_USER != root ]]; then as=(sudo -u "$SUDO_USER"); fi
  run "${as[@]}" env PATH="$(dirname "$swift_bin"):/usr/local/bin:/usr/bin:/bin" "$swift_bin" build --package-path "$repo" \
    -c release --product pacer --static-swift-stdlib
  binary=$repo/.build/release/pacer
  $dry || [[ -x $binary ]] || die "the build made no $binary"
}

create_user() {
  step "system user and group 'pacer'"
  if [[ -n $(uid_of pacer) ]]; then echo "   exists"; return; fi
  if ! $live && [[ ! -f $R/etc/passwd ]]; then
    echo "   skipped: $R has no /etc/passwd (files stay root's)"
    return
  fi
  local r=()
  $live || r=(--root "$R")
  run useradd "${r[@]}" --system --user-group --home-dir /var/lib/pacer --no-create-home \
    --shell /usr/sbin/nologin --comment "Pacer timer node" pacer
}

install_files() {
  step "the binary: ${bin_dst#"$R"}"
  install_file 0755 "" "$binary" "$bin_dst"
  if ! $dry; then
    local v
    v=$("$bin_dst" --version 2>&1) || die "${bin_dst#"$R"} does not run here: $v"
    echo "   pacer $v"
  fi

  step "the configuration: ${etc#"$R"}/pacer.yaml"
  ensure_dir 0755 "" "$etc"
  install_conffile 0640 "$(owner root pacer)" "$config_src" "$etc/pacer.yaml"
  if ! $dry; then
    "$bin_dst" check-config "$etc/pacer.yaml" >/dev/null || die "${etc#"$R"}/pacer.yaml has problems (above): fix it and run this again"
  fi

  step "the systemd unit: ${unit_dst#"$R"}"
  install_file 0644 "" "$unit_src" "$unit_dst"

  step "the dashboard: ${dash_dst#"$R"}"
  if [[ -d $dash_src ]] && [[ -n $(ls -A "$dash_src") ]]; then
    if [[ -d $dash_dst ]] && diff -r -q "$dash_src" "$dash_dst" >/dev/null 2>&1; then
      echo "   unchanged"
    else
      run rm -rf "$dash_dst"
      run install -d -m 0755 "$dash_dst"
      run cp -R --no-preserve=ownership "$dash_src/." "$dash_dst/"
      # mosquitto serves it as its own user: readable by all, whatever the checkout's umask.
      run chmod -R u+rwX,go+rX,go-w "$dash_dst"
    fi
  else
    note "warning: no dashboard files in ${dash_src}: the broker serves an empty folder"
    ensure_dir 0755 "" "$dash_dst"
  fi

  step "the phrase tables of spoken cues: ${phrases_dst#"$R"}"
  if [[ -d $phrases_src && $(cd "$phrases_src" && pwd) != $(cd "$phrases_dst" 2>/dev/null && pwd) ]]; then
    ensure_dir 0755 "" "$phrases_dst"
    local table
    for table in "$phrases_src"/*.json; do install_file 0644 "" "$table" "$phrases_dst/$(basename "$table")"; done
  else
    echo "   in place"
  fi

  if ((${#docs_src[@]})); then
    step "documentation: ${doc_dst#"$R"}"
    local f
    for f in "${docs_src[@]}"; do install_file 0644 "" "$f" "$doc_dst/$(basename "$f")"; done
  fi

  step "the state directory: ${state#"$R"}"
  ensure_dir 0750 "$(owner pacer pacer)" "$state"
}

setup_broker() {
  step "mosquitto: ${mosq_conf#"$R"}, ${mosq_acl#"$R"}, ${mosq_passwd#"$R"}"
  local before=$changes
  local broker_group
  broker_group=$(owner root mosquitto)
  install_conffile 0644 "" "$mosq_src/pacer.conf" "$mosq_conf"
  install_conffile 0640 "$broker_group" "$mosq_src/acl.example" "$mosq_acl"
  # The page that sends a screen still opening :9001 (where earlier versions served the page)
  # on to lighttpd: pacer.conf's http_dir, without which mosquitto does not start. The
  # package ships it in place already.
  local moved_src=$mosq_src/moved/index.html
  [[ -f $moved_src ]] || moved_src=$here/moved/index.html
  [[ -f $moved_src ]] || die "no moved/index.html (the page mosquitto's http_dir serves on 9001) beside this script: reinstall the package or run this from the source"
  if [[ $moved_src != "$share/moved/index.html" ]]; then
    ensure_dir 0755 "" "$share/moved"
    install_file 0644 "" "$moved_src" "$share/moved/index.html"
  fi

  # The node's account: a random password in /etc/pacer/mqtt-password (root:pacer 0640),
  # its hash in mosquitto's password file. Kept when both exist.
  local has_entry=false
  [[ -f $mosq_passwd ]] && grep -q '^pacer:' "$mosq_passwd" && has_entry=true
  if $has_entry && [[ -s $node_password ]]; then
    echo "   the broker account 'pacer' exists"
  else
    command -v mosquitto_passwd >/dev/null || $dry || die "mosquitto_passwd is missing (apt install mosquitto)"
    ensure_dir 0755 "" "$etc"
    ensure_dir 0755 "" "$(dirname "$mosq_passwd")"
    if [[ ! -s $node_password ]]; then
      echo "+ (a random password) > ${node_password#"$R"}"
      if ! $dry; then
        (umask 077; head -c 18 /dev/urandom | base64 | tr '+/' '-_' > "$node_password")
      fi
    fi
    local create=()
    [[ -f $mosq_passwd ]] || create=(-c)
    echo "+ mosquitto_passwd ${create[*]} ${mosq_passwd} pacer < ${node_password#"$R"} (twice)"
    if ! $dry; then
      local pw
      pw=$(cat "$node_password")
      printf '%s\n%s\n' "$pw" "$pw" | mosquitto_passwd "${create[@]}" "$mosq_passwd" pacer >/dev/null
    fi
  fi
  fix_attrs 0640 "$(owner root pacer)" "$node_password"
  fix_attrs 0640 "$broker_group" "$mosq_passwd"

  local env_tmp
  env_tmp=$(mktemp)
  printf '# Written by deploy/install.sh: the node'"'"'s account on the local broker.\nPACER_USERNAME=pacer\nPACER_PASSWORD_FILE=/etc/pacer/mqtt-password\n' > "$env_tmp"
  install_file 0644 "" "$env_tmp" "$node_env"
  rm -f "$env_tmp"

  if $services; then
    if ((changes > before)) || ! "$systemctl" is-active --quiet mosquitto; then
      run "$systemctl" restart mosquitto || die "mosquitto did not start with this configuration: journalctl -u mosquitto -n 30"
    else
      echo "   mosquitto runs with this configuration already"
    fi
  else
    echo "   not restarted: systemd is not running here; on the Pi: sudo systemctl restart mosquitto"
  fi
}

# The page: lighttpd with /etc/lighttpd/pacer.conf (deploy/lighttpd/pacer.conf, and
# pacer-https.conf with the certificate of make-cert.sh unless --no-https), started by Debian's
# lighttpd.service through a drop-in. docs/deployment.md, "The page: lighttpd, HTTPS".
setup_web() {
  step "lighttpd: ${web_conf#"$R"}, ${web_dropin#"$R"}$($https && echo ", ${tls#"$R"}")"
  local before=$changes
  if $https; then
    # The authority once (kept on every run: phones trust it), the server's certificate again
    # when this machine's name or addresses changed or it nears its end.
    if $dry; then
      echo "+ $make_cert --dir ${tls}"
    else
      local out
      out=$(bash "$make_cert" --dir "$tls") || die "no certificate for HTTPS (above); --no-https installs the page over HTTP only"
      sed 's/^/   /' <<<"$out"
      if grep -q "made" <<<"$out"; then echo "+ (certificates made in ${tls#"$R"})"; changes=$((changes + 1)); fi
    fi
  fi
  local conf_tmp
  conf_tmp=$(mktemp)
  { sed -e "s#@WWW@#/usr/share/pacer/dashboard#" -e "s#@BIND@#0.0.0.0#g" -e "s/@HTTP_PORT@/$http_port/" \
        -e "s/@WS_PORT@/$ws_port/" -e "s#@CA@#/etc/pacer/tls/ca.crt#" "$web_src/pacer.conf"
    if $https; then
      sed -e "s#@BIND@#0.0.0.0#g" -e "s/@HTTPS_PORT@/$https_port/" -e "s#@CERT@#/etc/pacer/tls/server.crt#" \
          -e "s#@KEY@#/etc/pacer/tls/server.key#" "$web_src/pacer-https.conf"
    fi
  } > "$conf_tmp"
  ensure_dir 0755 "" "$(dirname "$web_conf")"
  install_conffile 0644 "" "$conf_tmp" "$web_conf"
  rm -f "$conf_tmp"
  if ! $dry && command -v lighttpd >/dev/null && [[ -z $R ]]; then
    lighttpd -tt -f "$web_conf" >/dev/null || die "lighttpd refuses ${web_conf} (above)"
  fi
  ensure_dir 0755 "" "$(dirname "$web_dropin")"
  install_file 0644 "" "$web_src/lighttpd.service.d-pacer.conf" "$web_dropin"
  if $services; then
    if ((changes > before)); then run "$systemctl" daemon-reload; fi
    "$systemctl" is-enabled --quiet lighttpd.service || run "$systemctl" enable lighttpd.service
    if ((changes > before)) || ! "$systemctl" is-active --quiet lighttpd; then
      run "$systemctl" restart lighttpd || die "lighttpd did not start with ${web_conf}: journalctl -u lighttpd -n 30"
    else
      echo "   lighttpd runs with this configuration already"
    fi
  else
    echo "   not restarted: systemd is not running here; on the Pi: sudo systemctl daemon-reload && sudo systemctl restart lighttpd"
  fi
}

# journald: a persistent journal of bounded size (a drop-in; docs/deployment.md, "SD cards").
setup_journald() {
  step "journald: ${journald_dst#"$R"}"
  local before=$changes
  ensure_dir 0755 "" "$(dirname "$journald_dst")"
  install_conffile 0644 "" "$journald_src" "$journald_dst"
  if ((changes == before)); then
    echo "   journald runs with these settings already"
  elif $services; then
    # journald keeps the services' log streams across a restart (its file descriptor store).
    run "$systemctl" restart systemd-journald || note "warning: journald did not restart: journalctl -u systemd-journald -n 20"
  else
    echo "   not restarted: systemd is not running here; on the Pi: sudo systemctl restart systemd-journald"
  fi
}

# ---- sound (self-contained): the unit keeps devices closed; a drop-in opens the sound devices.
# Installed with --sound, or when the installed configuration plays cues on an ALSA device (as
# `pacer check-config` reads it: "sound on (ALSA device …)"). Never removed but by --uninstall.
sound_dropin_src=$here/pacer-sound.conf
sound_dropin_dst=$R/etc/systemd/system/pacer.service.d/sound.conf

# Whether the configuration at $1 plays its cues on a device, read by the pacer binary $2.
config_plays_sound() {
  [[ -f $1 && -x $2 ]] || return 1
  "$2" check-config "$1" 2>/dev/null | grep -q '^  sound on (ALSA device '
}

setup_sound() {
  step "sound: ${sound_dropin_dst#"$R"}"
  local why='' bin=$bin_dst
  [[ -x $bin ]] || bin=$R/usr/bin/pacer  # the Debian package's
  [[ -x $bin ]] || bin=$binary  # a dry run installs no binary
  if [[ $sound == yes ]]; then why='asked (--sound)'
  elif config_plays_sound "$etc/pacer.yaml" "$bin"; then why='the configuration plays cues on a device'
  elif $dry && [[ ! -f $etc/pacer.yaml ]] && config_plays_sound "$config_src" "$bin"; then why='the configuration plays cues on a device'
  fi
  if [[ -z $why ]]; then
    if [[ -f $sound_dropin_dst ]]; then echo "   kept (installed before)"
    else echo "   not needed: the configuration plays no cues on a device (--sound sets it up anyway)"
    fi
    return 0
  fi
  echo "   $why"
  ensure_dir 0755 "" "$(dirname "$sound_dropin_dst")"
  install_file 0644 "" "$sound_dropin_src" "$sound_dropin_dst"
  # The group that owns /dev/snd/* (SupplementaryGroups=audio): Debian makes it; a --root may lack it.
  if [[ -f $R/etc/group && -z $(gid_of audio) ]]; then note "warning: no group 'audio' in ${R:-/}etc/group: the sound devices stay closed to the service"; fi
  echo "   check it: sudo systemctl stop pacer && sudo pacer sound test --config /etc/pacer/pacer.yaml; then sudo systemctl start pacer"
}

uninstall_sound() {
  local f=$sound_dropin_dst
  if [[ -e $f || -L $f ]]; then run rm -f "$f"; fi
  if ! $dry && [[ -d $(dirname "$f") && -z $(ls -A "$(dirname "$f")") ]]; then run rmdir "$(dirname "$f")"; fi
  return 0
}
# ---- end of sound

start_service() {
  step "enabling and starting pacer.service"
  if ! $services && ! $live; then
    echo "   skipped: installed into $R; on the machine itself: sudo systemctl daemon-reload && sudo systemctl enable --now pacer"
    return
  fi
  if ! $services; then
    echo "   skipped: systemd is not running here (a container or chroot); where it runs:"
    echo "   sudo systemctl daemon-reload && sudo systemctl enable --now pacer"
    return
  fi
  local changed=$changes
  run "$systemctl" daemon-reload
  "$systemctl" is-enabled --quiet pacer.service || run "$systemctl" enable pacer.service
  # After a change (an upgrade, a new password) restart, so the new files are used; a run
  # that changed nothing leaves a running node alone.
  if ((changed > 0)) || ! "$systemctl" is-active --quiet pacer.service; then
    run "$systemctl" restart pacer.service || die "pacer did not start: journalctl -u pacer -n 50"
  else
    echo "   pacer runs with these files already"
  fi
  if ! $dry; then
    sleep 2
    "$systemctl" is-active --quiet pacer.service || die "pacer did not start: journalctl -u pacer -n 50"
    echo "   running; its log: journalctl -u pacer -f"
  fi
}

summary() {
  $dry && { echo "dry run: nothing was changed"; return; }
  local host ip
  host=$(hostname 2>/dev/null || echo raspberrypi)
  ip=$(hostname -I 2>/dev/null | awk '{print $1}')
  cat <<MSG

Pacer is installed.
MSG
  if $web; then
    echo "  Wall clock (any browser on the gym's network): http://$host.local/${ip:+   or http://$ip/}"
    if $https; then
      echo "  The coach's app (HTTPS): https://$host.local/   (phones trust the CA first: http://$host.local/pacer-ca.crt, docs/dashboard.md)"
    fi
  fi
  cat <<MSG
  Configuration: /etc/pacer/pacer.yaml (then: sudo systemctl restart pacer)
  A coach account to command timers:  sudo mosquitto_passwd /etc/mosquitto/passwd coach
                                       && sudo systemctl reload mosquitto
MSG
}

uninstall() {
  step "stopping pacer.service"
  if $services; then
    run "$systemctl" disable --now pacer.service || true
  else
    echo "   skipped: systemd is not running here"
  fi
  step "removing the binary, unit, dashboard, documentation, sound drop-in, mosquitto snippet, lighttpd files and journald drop-in"
  local f journald_changed=false web_changed=false
  for f in "$bin_dst" "$unit_dst" "$mosq_conf" "$mosq_conf.dist" "$etc/pacer.yaml.dist"; do
    if [[ -e $f || -L $f ]]; then run rm -f "$f"; fi
  done
  for f in "$web_conf" "$web_conf.dist" "$web_dropin"; do
    if [[ -e $f || -L $f ]]; then run rm -f "$f"; web_changed=true; fi
  done
  forget_sum "$web_conf"
  if $web_changed && ! $dry && [[ -d $(dirname "$web_dropin") && -z $(ls -A "$(dirname "$web_dropin")") ]]; then
    run rmdir "$(dirname "$web_dropin")"
  fi
  # The journald drop-in only when this script installed it (its default is on record).
  if [[ -n $(installed_sum "$journald_dst") ]]; then
    for f in "$journald_dst" "$journald_dst.dist"; do
      if [[ -e $f || -L $f ]]; then run rm -f "$f"; journald_changed=true; fi
    done
    forget_sum "$journald_dst"
  fi
  if $journald_changed && ! $dry && [[ -z $(ls -A "$(dirname "$journald_dst")") ]]; then
    run rmdir "$(dirname "$journald_dst")"
  fi
  for f in "$share" "$doc_dst"; do
    if [[ -e $f ]]; then run rm -rf "$f"; fi
  done
  uninstall_sound
  if $services; then
    run "$systemctl" daemon-reload
    if "$systemctl" is-active --quiet mosquitto; then run "$systemctl" restart mosquitto; fi
    # Back to Debian's own configuration (its placeholder page on port 80).
    if $web_changed && "$systemctl" is-active --quiet lighttpd; then run "$systemctl" restart lighttpd || true; fi
    if $journald_changed; then run "$systemctl" restart systemd-journald || true; fi
  fi
  if ! $purge; then
    note "kept /etc/pacer (configuration, the certificate authority in /etc/pacer/tls), /var/lib/pacer (timers, history), ${mosq_acl#"$R"} and the broker account 'pacer'; --purge removes them too"
    return
  fi
  step "purging configuration, data, broker account and user"
  for f in "$etc" "$state" "$R/var/lib/private/pacer" "$mosq_acl" "$mosq_acl.dist"; do
    if [[ -e $f || -L $f ]]; then run rm -rf "$f"; fi
  done
  if [[ -f $mosq_passwd ]] && grep -q '^pacer:' "$mosq_passwd"; then
    run mosquitto_passwd -D "$mosq_passwd" pacer
    # A password file of ours only (made by this script): nothing left in it.
    if ! $dry && [[ ! -s $mosq_passwd ]]; then run rm -f "$mosq_passwd"; fi
  fi
  if [[ -n $(uid_of pacer) ]]; then
    local r=()
    $live || r=(--root "$R")
    run userdel "${r[@]}" pacer
  fi
}

case $mode in
  install)
    check_system
    apt_packages
    build_binary
    create_user
    install_files
    if $journald; then setup_journald; else step "journald: left alone (--no-journald)"; fi
    if $broker; then setup_broker; else step "mosquitto: left alone (--no-broker)"; fi
    if $web; then setup_web; else step "lighttpd: left alone (--no-web)"; fi
    setup_sound
    start_service
    summary
    ;;
  broker)
    check_system
    apt_packages
    create_user
    setup_broker
    if $web; then setup_web; else step "lighttpd: left alone (--no-web)"; fi
    setup_sound
    if $services; then run "$systemctl" daemon-reload; run "$systemctl" restart pacer.service || true; fi
    $dry || note "broker configured; the wall clock: http://$(hostname).local/$($web && $https && echo " (HTTPS: https://$(hostname).local/)")"
    ;;
  sound)
    # After the package, or after turning sound on in /etc/pacer/pacer.yaml. A new drop-in
    # takes effect at the service's next start: restarted here if it runs.
    before=$changes
    setup_sound
    if $services && ((changes > before)); then
      run "$systemctl" daemon-reload
      run "$systemctl" try-restart pacer.service || true
    fi
    ;;
  uninstall)
    uninstall
    $dry || note "uninstalled"
    ;;
esac
