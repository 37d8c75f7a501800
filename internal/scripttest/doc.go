// Package scripttest holds the tests of the shell scripts under scripts/:
// shellcheck, the bootstrap (apt path on a real loop device, dnf and yum
// through recording stand-ins, every refusal), the rpm and deb built by
// scripts/package.sh, and the Ansible fleet playbook. scripts/ holds shell
// only, so its tests live here. The package has no code of its own.
package scripttest
