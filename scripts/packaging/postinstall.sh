#!/bin/sh
# diskprep package post-install: make systemd see diskprep-firstboot.service.
# The unit is not enabled here: a kickstart (scripts/kickstart/diskprep.ks)
# or the admin enables it, as it prepares disks from /etc/diskprep/plan.yaml.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
