#!/usr/bin/env bash
# A local certificate authority and a server certificate for the page over HTTPS/WSS
# (lighttpd: deploy/lighttpd/). Used by deploy/install.sh (into /etc/pacer/tls) and by
# scripts/run (into data/tls). See docs/dashboard.md ("HTTPS on the gym's network").
#
#   deploy/make-cert.sh [--dir DIR] [--host NAME] [--ip ADDR]... [--no-host-ips] [--force]
#
#   --dir DIR       where the files go (default /etc/pacer/tls)
#   --host NAME     the machine's name (default: `hostname`); the certificate names NAME,
#                   NAME.local and localhost
#   --ip ADDR       an address the certificate names (repeatable); 127.0.0.1 and ::1 always,
#                   and this machine's addresses (`hostname -I`) unless --no-host-ips
#   --force         a new server certificate even when the one there is still good
#
# Files: ca.key (0600) and ca.crt, the authority, made once and kept (10 years): phones that
# trust ca.crt keep trusting every server certificate it signs. server.key (0600) and
# server.crt, the server's, valid 825 days (the most Apple's devices accept; server.names
# keeps the names and addresses it was made for), made again
# when missing, when the names or addresses change, when not signed by ca.crt, or within 30
# days of expiry. Prints what it did; exits non-zero with the reason when openssl fails.
set -euo pipefail

die() { echo "make-cert.sh: error: $*" >&2; exit 1; }
dir=/etc/pacer/tls host='' ips=() host_ips=true force=false
while (($#)); do
  case $1 in
    --dir) dir=${2:?--dir needs a directory}; shift ;;
    --dir=*) dir=${1#*=} ;;
    --host) host=${2:?--host needs a name}; shift ;;
    --host=*) host=${1#*=} ;;
    --ip) ips+=("${2:?--ip needs an address}"); shift ;;
    --ip=*) ips+=("${1#*=}") ;;
    --no-host-ips) host_ips=false ;;
    --force) force=true ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
command -v openssl >/dev/null || die "openssl is missing (apt install openssl)"
[[ -n $host ]] || host=$(hostname 2>/dev/null || true)
host=${host%%.*}
[[ $host =~ ^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$ ]] \
  || die "'$host' is not a host name (letters, digits and '-'): give one with --host NAME"
ips+=(127.0.0.1 ::1)
if $host_ips; then
  # shellcheck disable=SC2207
  ips+=($(hostname -I 2>/dev/null || true))
fi
for ip in "${ips[@]}"; do
  [[ $ip =~ ^[0-9.]+$ || $ip =~ ^[0-9A-Fa-f:]+$ ]] || die "--ip '$ip' is not an IPv4 or IPv6 address"
done

# The subjectAltName, each entry once, in a stable order (its text decides whether the
# certificate there still fits).
san="DNS:$host,DNS:$host.local"
[[ $host == localhost ]] || san+=",DNS:localhost"
declare -A seen=()
for ip in "${ips[@]}"; do
  # fe80:: addresses need a zone, which a certificate cannot name.
  [[ ${ip,,} == fe80:* ]] && continue
  [[ -n ${seen[$ip]:-} ]] && continue
  seen[$ip]=1
  san+=",IP:$ip"
done

mkdir -p "$dir"
chmod 0755 "$dir"
cd "$dir"
umask 077

# The authority: once. A new one would make every phone trust it again.
if [[ -s ca.key && -s ca.crt ]]; then
  echo "make-cert.sh: keeping the authority $dir/ca.crt ($(openssl x509 -in ca.crt -noout -enddate))"
else
  [[ -e ca.key || -e ca.crt ]] && die "$dir has only one of ca.key and ca.crt: move both away to make a new authority (phones must then trust the new ca.crt)"
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -days 3650 \
    -subj "/O=Pacer/CN=Pacer local CA ($host)" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" \
    -keyout ca.key.new -out ca.crt.new 2>/dev/null || die "openssl could not make the authority in $dir"
  mv ca.key.new ca.key
  mv ca.crt.new ca.crt
  echo "make-cert.sh: made the authority $dir/ca.crt (phones trust this file: docs/dashboard.md)"
fi
chmod 0600 ca.key
chmod 0644 ca.crt

# The server certificate: again when it no longer fits.
why=''
if $force; then why="--force"
elif [[ ! -s server.key || ! -s server.crt ]]; then why="none yet"
elif ! openssl verify -CAfile ca.crt server.crt >/dev/null 2>&1; then why="not signed by ca.crt"
elif ! openssl x509 -in server.crt -noout -checkend $((30 * 86400)) >/dev/null; then why="expires within 30 days"
elif [[ $(cat server.names 2>/dev/null) != "$san" ]]; then why="names or addresses changed"
fi
if [[ -z $why ]]; then
  echo "make-cert.sh: keeping $dir/server.crt ($(openssl x509 -in server.crt -noout -enddate))"
  exit 0
fi
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
  -subj "/O=Pacer/CN=$host.local" -keyout server.key.new -out server.csr 2>/dev/null \
  || die "openssl could not make a key and request in $dir"
ext=$(mktemp)
trap 'rm -f "$ext" server.csr server.key.new server.crt.new' EXIT
printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
  "extendedKeyUsage=serverAuth" "subjectAltName=$san" "subjectKeyIdentifier=hash" \
  "authorityKeyIdentifier=keyid" > "$ext"
# A random serial (-CAcreateserial would leave a ca.srl to keep).
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
  -days 825 -sha256 -extfile "$ext" -out server.crt.new 2>/dev/null \
  || die "openssl could not sign the server certificate in $dir"
mv server.key.new server.key
mv server.crt.new server.crt
echo "$san" > server.names
chmod 0600 server.key
chmod 0644 server.crt server.names
echo "make-cert.sh: made $dir/server.crt ($why): ${san//,/, }; $(openssl x509 -in server.crt -noout -enddate)"
