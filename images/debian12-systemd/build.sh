#!/usr/bin/env bash
# Build the hermetic test/lab base image `sparkfleet/debian12-systemd` from Debian
# packages alone: debootstrap a minimal Debian 12 root, bake in the controller's
# extra CA certificates, and `docker import` it. No registry is contacted, so it
# works air-gapped (point SPARKFLEET_DEBIAN_MIRROR at your own Debian mirror).
#
# The image is tagged by the sha256 of its recipe (this script, packages.txt, the
# mirror and the CA certificates baked in) and re-tagged `:latest`; a build whose
# recipe tag already exists is skipped, so repeated runs cost one `docker image
# inspect`.
#
# Environment:
#   SPARKFLEET_IMAGE           image name            (sparkfleet/debian12-systemd)
#   SPARKFLEET_DEBIAN_MIRROR   Debian mirror          (http://deb.debian.org/debian)
#   SPARKFLEET_DEBIAN_SUITE    suite                  (bookworm)
#   SPARKFLEET_CA_DIR          extra CA certificates (*.crt) to trust inside
#                              the image             (/usr/local/share/ca-certificates)
#   SPARKFLEET_IMAGE_FORCE=1   rebuild even when the recipe tag exists
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
image=${SPARKFLEET_IMAGE:-sparkfleet/debian12-systemd}
mirror=${SPARKFLEET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${SPARKFLEET_DEBIAN_SUITE:-bookworm}
ca_dir=${SPARKFLEET_CA_DIR:-/usr/local/share/ca-certificates}

mapfile -t packages < <(grep -vE '^\s*(#|$)' "$here/packages.txt")
shopt -s nullglob
ca_files=("$ca_dir"/*.crt)
shopt -u nullglob

recipe=$( {
  cat "$here/build.sh" "$here/packages.txt"
  echo "$mirror $suite"
  for f in "${ca_files[@]}"; do sha256sum <"$f"; done
} | sha256sum | cut -c1-12)
tag="$image:$recipe"

if [ "${SPARKFLEET_IMAGE_FORCE:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  docker tag "$tag" "$image:latest"
  echo "image: $tag is current (recipe unchanged), tagged $image:latest"
  exit 0
fi

command -v debootstrap >/dev/null || {
  echo "image: installing debootstrap" >&2
  "$here/../../scripts/apt-get.sh" update -qq
  DEBIAN_FRONTEND=noninteractive "$here/../../scripts/apt-get.sh" install -y -qq debootstrap >/dev/null
}

work=$(mktemp -d /var/tmp/sparkfleet-image.XXXXXX)
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
root="$work/rootfs"
start=$(date +%s)

echo "image: debootstrap $suite from $mirror (${#packages[@]} extra packages)"
include=$(IFS=,; echo "${packages[*]}")
debootstrap --variant=minbase --include="$include" "$suite" "$root" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || { tail -n 40 "$work/debootstrap.log" >&2; exit 1; }

# The controller's extra CA certificates (a corporate or egress proxy's CA):
# trusted inside the image so apt/pip/npm in test hosts work behind it.
for f in "${ca_files[@]}"; do
  install -m 0644 "$f" "$root/usr/local/share/ca-certificates/sparkfleet-image-$(basename "$f")"
done
chroot "$root" update-ca-certificates >/dev/null 2>&1

cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${mirror%/debian}/debian-security $suite-security main
SOURCES

# systemd as PID 1 in a container: no consoles, no udev, no kernel-only units.
for unit in getty.target console-getty.service systemd-udevd.service \
  systemd-udev-trigger.service systemd-modules-load.service \
  sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount \
  systemd-remount-fs.service systemd-firstboot.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
: >"$root/etc/machine-id"
echo 'sparkfleet' >"$root/etc/hostname"

# Reached like a cloud VM: over SSH, as the unprivileged sudo user `admin` (the
# default user of Debian's cloud images). No password at all ('*': key
# authentication only). Its authorized key is NOT baked in: the lab bind-mounts a
# public key read-only on /home/admin/.ssh/authorized_keys, as a cloud's metadata
# key injection would provide it (sshd's StrictModes accepts a root-owned 0644 file).
chroot "$root" useradd --create-home --uid 1000 --user-group --shell /bin/bash \
  --password '*' admin
install -d -m 0700 -o 1000 -g 1000 "$root/home/admin/.ssh"
echo 'admin ALL=(ALL) NOPASSWD:ALL' >"$root/etc/sudoers.d/90-admin"
chmod 0440 "$root/etc/sudoers.d/90-admin"
chroot "$root" visudo -cf /etc/sudoers.d/90-admin >/dev/null

# sshd: keys only, never root.
cat >"$root/etc/ssh/sshd_config.d/50-sparkfleet.conf" <<'SSHD'
# sparkfleet base image: key authentication only, no root login.
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
SSHD
# No SSH host keys in the image (every container would share them): each container
# generates its own at boot, before Debian's `sshd -t` check (`ssh-keygen -A`
# creates only the missing ones, so a restarted container keeps its keys).
rm -f "$root"/etc/ssh/ssh_host_*
# (The drop-in restates Debian's only ExecStartPre after ssh-keygen: fail the build
# if Debian's unit changes.)
[ "$(grep '^ExecStartPre=' "$root/lib/systemd/system/ssh.service")" = 'ExecStartPre=/usr/sbin/sshd -t' ]
mkdir -p "$root/etc/systemd/system/ssh.service.d"
cat >"$root/etc/systemd/system/ssh.service.d/50-sparkfleet-host-keys.conf" <<'UNIT'
[Service]
ExecStartPre=
ExecStartPre=/usr/bin/ssh-keygen -A
ExecStartPre=/usr/sbin/sshd -t
UNIT
chroot "$root" systemctl enable ssh.service >/dev/null 2>&1
# Setting the audit login uid needs CAP_AUDIT_CONTROL, which a container lacks when
# its engine already runs with one set (dockerd started from a login session):
# auditing only, so a failure must not refuse the login.
grep -qE '^session\s+required\s+pam_loginuid\.so' "$root/etc/pam.d/sshd"
sed -i -E 's/^session(\s+)required(\s+)pam_loginuid\.so/session\1optional\2pam_loginuid.so/' "$root/etc/pam.d/sshd"

# Keep downloaded .debs: the harness mounts a per-host directory of this machine
# on /var/cache/apt/archives, so a re-created test host installs from the cache.
rm -f "$root/etc/apt/apt.conf.d/docker-clean"
echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/90sparkfleet-keep-debs"
chroot "$root" apt-get clean
rm -rf "$root/var/lib/apt/lists/"* "$root/var/log/"*.log "$root/var/cache/debconf/"*-old
# No package lists ship in the image: make them look ancient, so the first
# `apt: update_cache: true, cache_valid_time: N` in a test host really updates.
touch -d @0 "$root/var/lib/apt/lists"

tar --numeric-owner -C "$root" -c . | docker import \
  --change 'ENV container=docker' \
  --change 'CMD ["/lib/systemd/systemd"]' \
  --message "sparkfleet base image, recipe $recipe" \
  - "$tag" >/dev/null
docker tag "$tag" "$image:latest"
echo "image: built $tag in $(( $(date +%s) - start ))s, tagged $image:latest"
