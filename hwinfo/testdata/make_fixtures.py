#!/usr/bin/env python3
"""Writes the hardware fixture trees used by hwinfo's tests.

Each tree mirrors what the kernel, udev and the distribution expose on one
kind of machine (sysfs layout per Documentation/ABI/testing/sysfs-block and
real hosts), with relative symlinks as sysfs has them. Only the files hwinfo
reads are present. Run from hwinfo/testdata: ./make_fixtures.py
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


class Tree:
    def __init__(self, name):
        self.root = os.path.join(HERE, name)
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)

    def p(self, rel):
        return os.path.join(self.root, rel.lstrip("/"))

    def write(self, rel, content, mode="w"):
        path = self.p(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(content)

    def link(self, rel, target):
        """rel -> target, both absolute inside the tree, stored relative."""
        path = self.p(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(os.path.relpath(self.p(target), os.path.dirname(path)), path)

    def attrs(self, d, **kv):
        for k, v in kv.items():
            self.write(d + "/" + k.replace("__", "/"), str(v) + "\n")

    def disk(self, name, devpath, dev, sectors, lbs=512, pbs=512, minio=None,
             optio=0, rot=0, removable=0, ro=0):
        self.link("/sys/block/" + name, devpath)
        self.link("/sys/class/block/" + name, devpath)
        self.attrs(devpath, dev=dev, size=sectors, removable=removable, ro=ro)
        self.attrs(devpath + "/queue", logical_block_size=lbs,
                   physical_block_size=pbs,
                   minimum_io_size=minio if minio is not None else pbs,
                   optimal_io_size=optio, rotational=rot)

    def part(self, disk_devpath, name, num, dev, start, sectors, ro=0):
        d = disk_devpath + "/" + name
        self.attrs(d, partition=num, dev=dev, start=start, size=sectors, ro=ro)
        self.link("/sys/class/block/" + name, d)
        return d

    def holder(self, lower_devpath, name, dev, sectors, dmname, dmuuid):
        hp = "/sys/devices/virtual/block/" + name
        if not os.path.exists(self.p(hp)):
            self.link("/sys/block/" + name, hp)
            self.attrs(hp, dev=dev, size=sectors, removable=0, ro=0)
            self.attrs(hp + "/dm", name=dmname, uuid=dmuuid)
        self.link(lower_devpath + "/holders/" + name, hp)
        self.link(hp + "/slaves/" + os.path.basename(lower_devpath), lower_devpath)

    def udev(self, dev, **env):
        self.write("/run/udev/data/b" + dev,
                   "".join("E:%s=%s\n" % (k, v) for k, v in env.items()))

    def bylink(self, kind, name, target):
        self.link("/dev/disk/%s/%s" % (kind, name), "/dev/" + target)
        if not os.path.exists(self.p("/dev/" + target)):
            self.write("/dev/" + target, "")

    def cpuinfo(self, n, model, vendor, flags, phys, cores_per_pkg, core_ids):
        out = []
        for i in range(n):
            out.append("processor\t: %d\nvendor_id\t: %s\ncpu family\t: 6\n"
                       "model name\t: %s\nphysical id\t: %d\nsiblings\t: %d\n"
                       "core id\t\t: %d\ncpu cores\t: %d\nflags\t\t: %s\n\n"
                       % (i, vendor, model, phys[i], cores_per_pkg, core_ids[i],
                          cores_per_pkg, flags))
        self.write("/proc/cpuinfo", "".join(out))

    def topology(self, phys, core_ids):
        for i, (p, c) in enumerate(zip(phys, core_ids)):
            self.attrs("/sys/devices/system/cpu/cpu%d/topology" % i,
                       physical_package_id=p, core_id=c)

    def dmi(self, **kv):
        self.attrs("/sys/devices/virtual/dmi/id", **kv)
        self.link("/sys/class/dmi/id", "/sys/devices/virtual/dmi/id")


def ata_string(s, n):
    """An ATA IDENTIFY string field: space padded to n bytes, each 16-bit
    word holding its first character in the high byte (ATA8-ACS 3.4.9), so
    in little-endian memory every pair of characters is swapped."""
    b = s.encode().ljust(n, b" ")
    return bytes(b[i ^ 1] for i in range(n))


def identify(model, serial, firmware, rpm=0, wwn=None):
    """512 bytes of ATA IDENTIFY DEVICE data as QEMU's IDE/AHCI disk gives
    them (hw/ide/core.c ide_identify), the fields hwinfo reads: serial
    (words 10-19), firmware (23-26), model (27-46), major version (80),
    WWN (87 bit 8, 108-111), nominal media rotation rate (217)."""
    w = bytearray(512)

    def word(n, v):
        w[2 * n:2 * n + 2] = (v & 0xffff).to_bytes(2, "little")
    word(0, 0x0040)
    w[20:40] = ata_string(serial, 20)
    w[46:54] = ata_string(firmware, 8)
    w[54:94] = ata_string(model, 40)
    word(80, 0x00f0)
    if wwn is not None:
        word(87, (1 << 14) | (1 << 8))
        for i in range(4):
            word(108 + i, wwn >> (48 - 16 * i))
    else:
        word(87, 1 << 14)
    word(217, rpm)
    return bytes(w)


def vpd_pg89(ident):
    """The ATA Information VPD page libata builds (SAT-5 12.4.2;
    drivers/ata/libata-scsi.c ata_scsiop_inq_89): 60 bytes of header, SAT
    vendor/product/revision and the device signature FIS, then the 512
    IDENTIFY bytes as the device sent them. The header and the words
    identify() sets are byte for byte those of a 6.1 guest (testdata/vpd)."""
    hdr = bytearray(60)
    hdr[1] = 0x89
    hdr[2:4] = (0x238).to_bytes(2, "big")
    hdr[8:16] = b"linux   "
    hdr[16:32] = b"libata          "
    hdr[32:36] = b"3.00"  # libata's SAT revision, as 6.1 has it
    hdr[36:56] = bytes([0x34, 0x80, 0x40, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0])
    hdr[56] = 0xec  # IDENTIFY DEVICE
    return bytes(hdr) + ident


def vpd_pgb1(rpm, form_factor=0):
    """Block Device Characteristics VPD page (SBC-4 6.6.2): bytes 4-5 the
    MEDIUM ROTATION RATE (0 not reported, 1 non-rotating, else rpm)."""
    b = bytearray(64)
    b[1] = 0xb1
    b[3] = 0x3c
    b[4:6] = rpm.to_bytes(2, "big")
    b[7] = form_factor
    return bytes(b)


def vpd_pg80(serial):
    """Unit Serial Number VPD page (SPC-4 7.8.15)."""
    s = serial.encode()
    return bytes([0, 0x80, 0, len(s)]) + s


CENTOS7_OS_RELEASE = '''NAME="CentOS Linux"
VERSION="7 (Core)"
ID="centos"
ID_LIKE="rhel fedora"
VERSION_ID="7"
PRETTY_NAME="CentOS Linux 7 (Core)"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:centos:centos:7"
HOME_URL="https://www.centos.org/"
BUG_REPORT_URL="https://bugs.centos.org/"
'''

SWAPS_HEADER = "Filename\t\t\t\tType\t\tSize\tUsed\tPriority\n"
INTEL_FLAGS = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc aperfmperf eagerfpu pni pclmulqdq dtes64 monitor ds_cpl vmx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch epb intel_pt tpr_shadow vnmi flexpriority ept vpid fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm mpx rdseed adx smap clflushopt xsaveopt xsavec xgetbv1 dtherm ida arat pln pts hwp hwp_notify hwp_act_window hwp_epp"


def desktop():
    t = Tree("desktop-nvme-sata")
    t.write("/proc/sys/kernel/hostname", "storage-lab\n")
    t.write("/etc/hostname", "storage-lab\n")
    t.write("/proc/sys/kernel/osrelease", "3.10.0-514.el7.x86_64\n")
    t.write("/etc/os-release", CENTOS7_OS_RELEASE)
    t.write("/etc/redhat-release", "CentOS Linux release 7.3.1611 (Core) \n")
    t.cpuinfo(4, "Intel(R) Core(TM) i5-7600T CPU @ 2.80GHz", "GenuineIntel",
              INTEL_FLAGS, [0, 0, 0, 0], 4, [0, 1, 2, 3])
    t.topology([0, 0, 0, 0], [0, 1, 2, 3])
    t.write("/proc/meminfo", "MemTotal:       32657824 kB\nMemFree:        30123456 kB\n"
            "MemAvailable:   31234567 kB\nHugepagesize:       2048 kB\n")
    t.write("/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc hpet acpi_pm \n")
    t.dmi(sys_vendor="Gigabyte Technology Co., Ltd.", product_name="H270-HD3",
          product_version="Default string", board_vendor="Gigabyte Technology Co., Ltd.",
          board_name="H270-HD3-CF", board_version="x.x",
          bios_vendor="American Megatrends Inc.", bios_version="F3", bios_date="03/10/2017")

    nvme_ctrl = "/sys/devices/pci0000:00/0000:00:1d.0/0000:03:00.0/nvme/nvme0"
    t.attrs(nvme_ctrl, model="Samsung SSD 960 EVO 500GB               ",
            serial="S3EUNX0J512345X     ", firmware_rev="2B7QCXE7")
    nvme = nvme_ctrl + "/nvme0n1"
    t.disk("nvme0n1", nvme, "259:0", 976773168, rot=0)
    t.attrs(nvme, wwid="eui.0025385571b01234")
    t.link(nvme + "/device", nvme_ctrl)
    p1 = t.part(nvme, "nvme0n1p1", 1, "259:1", 2048, 2097152)
    p2 = t.part(nvme, "nvme0n1p2", 2, "259:2", 2099200, 974673920)
    t.holder(p2, "dm-0", "253:0", 941113344, "cl-root",
             "LVM-b3Cc9Yt1mW3vjA0cjHmYd5Tfd6R0kN3Gm0sRJTn8fDq2bQyZcD0SxvUSt1IYrK7v")
    t.holder(p2, "dm-1", "253:1", 33030144, "cl-swap",
             "LVM-b3Cc9Yt1mW3vjA0cjHmYd5Tfd6R0kN3Gw4Lk0f8hU2cBfN1w8XyGJ3oZt9sQm2vE")

    sda = "/sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda"
    t.disk("sda", sda, "8:0", 5860533168, pbs=4096, rot=1)
    scsi = os.path.dirname(os.path.dirname(sda))
    t.link(sda + "/device", scsi)
    t.attrs(scsi, vendor="ATA     ", model="TOSHIBA DT01ACA3", rev="ABB0")
    t.part(sda, "sda1", 1, "8:1", 2048, 5860529152)

    t.udev("259:0", DEVTYPE="disk", ID_SERIAL_SHORT="S3EUNX0J512345X",
           ID_WWN="eui.0025385571b01234", ID_MODEL="Samsung SSD 960 EVO 500GB",
           ID_SERIAL="Samsung SSD 960 EVO 500GB_S3EUNX0J512345X",
           ID_PART_TABLE_TYPE="dos", ID_PART_TABLE_UUID="000a1b2c")
    t.udev("259:1", DEVTYPE="partition", ID_FS_TYPE="xfs", ID_FS_USAGE="filesystem",
           ID_FS_UUID="5c1d2b34-8f2e-4e5a-9d6c-1a2b3c4d5e6f",
           ID_FS_UUID_ENC="5c1d2b34-8f2e-4e5a-9d6c-1a2b3c4d5e6f",
           ID_PART_ENTRY_SCHEME="dos", ID_PART_ENTRY_UUID="000a1b2c-01",
           ID_PART_ENTRY_TYPE="0x83", ID_PART_ENTRY_NUMBER="1", ID_PART_ENTRY_FLAGS="0x80")
    t.udev("259:2", DEVTYPE="partition", ID_FS_TYPE="LVM2_member", ID_FS_USAGE="raid",
           ID_FS_VERSION="LVM2 001", ID_FS_UUID="Xq3e1v-5aVt-2bJd-Ke0p-Qm4c-7YhN-aBcDeF",
           ID_PART_ENTRY_SCHEME="dos", ID_PART_ENTRY_UUID="000a1b2c-02",
           ID_PART_ENTRY_TYPE="0x8e", ID_PART_ENTRY_NUMBER="2")
    t.udev("8:0", DEVTYPE="disk", ID_ATA="1", ID_BUS="ata", ID_TYPE="disk",
           ID_MODEL="TOSHIBA_DT01ACA300",
           ID_MODEL_ENC="TOSHIBA\\x20DT01ACA300\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20\\x20",
           ID_REVISION="MX6OABB0", ID_SERIAL="TOSHIBA_DT01ACA300_Z3GKXXXXGS",
           ID_SERIAL_SHORT="Z3GKXXXXGS", ID_WWN="0x5000039fe6d0a1b2",
           ID_WWN_WITH_EXTENSION="0x5000039fe6d0a1b2", ID_ATA_ROTATION_RATE_RPM="7200",
           ID_PATH="pci-0000:00:17.0-ata-1.0",
           ID_PART_TABLE_TYPE="gpt", ID_PART_TABLE_UUID="7d3c2b1a-0f9e-4d8c-b7a6-1e2d3c4b5a69")
    t.udev("8:1", DEVTYPE="partition", ID_BUS="ata", ID_FS_TYPE="xfs", ID_FS_USAGE="filesystem",
           ID_FS_LABEL="data", ID_FS_LABEL_ENC="data",
           ID_FS_UUID="9e8d7c6b-5a49-4838-a727-16051f4e3d2c",
           ID_PART_ENTRY_SCHEME="gpt", ID_PART_ENTRY_NAME="data\\x20disk",
           ID_PART_ENTRY_UUID="2f4e6d8c-1a3b-4c5d-8e7f-9a0b1c2d3e4f",
           ID_PART_ENTRY_TYPE="0fc63daf-8483-4772-8e79-3d69d8477de4", ID_PART_ENTRY_NUMBER="1")

    t.bylink("by-id", "nvme-Samsung_SSD_960_EVO_500GB_S3EUNX0J512345X", "nvme0n1")
    t.bylink("by-id", "nvme-eui.0025385571b01234", "nvme0n1")
    t.bylink("by-id", "nvme-Samsung_SSD_960_EVO_500GB_S3EUNX0J512345X-part1", "nvme0n1p1")
    t.bylink("by-id", "nvme-Samsung_SSD_960_EVO_500GB_S3EUNX0J512345X-part2", "nvme0n1p2")
    t.bylink("by-id", "lvm-pv-uuid-Xq3e1v-5aVt-2bJd-Ke0p-Qm4c-7YhN-aBcDeF", "nvme0n1p2")
    t.bylink("by-id", "dm-name-cl-root", "dm-0")
    t.bylink("by-id", "dm-name-cl-swap", "dm-1")
    t.bylink("by-id", "ata-TOSHIBA_DT01ACA300_Z3GKXXXXGS", "sda")
    t.bylink("by-id", "wwn-0x5000039fe6d0a1b2", "sda")
    t.bylink("by-id", "ata-TOSHIBA_DT01ACA300_Z3GKXXXXGS-part1", "sda1")
    t.bylink("by-path", "pci-0000:03:00.0-nvme-1", "nvme0n1")
    t.bylink("by-path", "pci-0000:00:17.0-ata-1.0", "sda")
    t.bylink("by-path", "pci-0000:00:17.0-ata-1.0-part1", "sda1")

    t.write("/proc/self/mountinfo",
            "18 40 0:17 / /sys rw,nosuid,nodev,noexec,relatime shared:6 - sysfs sysfs rw,seclabel\n"
            "19 40 0:3 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw\n"
            "40 1 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/cl-root rw,seclabel,attr2,inode64,noquota\n"
            "62 40 259:1 / /boot rw,relatime shared:27 - xfs /dev/nvme0n1p1 rw,seclabel,attr2,inode64,noquota\n"
            "64 40 8:1 / /mnt rw,relatime shared:28 - xfs /dev/sda1 rw,seclabel,attr2,inode64,noquota\n"
            "66 40 8:1 /backups /srv/backup\\040copy rw,relatime shared:28 - xfs /dev/sda1 rw,seclabel,attr2,inode64,noquota\n")
    t.write("/proc/swaps", SWAPS_HEADER + "/dev/dm-1                               partition\t16515068\t0\t-1\n")


def vmware():
    t = Tree("vmware-rdm")
    t.write("/proc/sys/kernel/hostname", "esxi-guest.lab.example\n")
    t.write("/proc/sys/kernel/osrelease", "3.10.0-1160.el7.x86_64\n")
    # No etc/os-release: CentOS 7 keeps the real file in usr/lib.
    t.write("/usr/lib/os-release", CENTOS7_OS_RELEASE)
    t.write("/etc/redhat-release", "CentOS Linux release 7.9.2009 (Core)\n")
    flags = INTEL_FLAGS.replace(" vmx", "") + " hypervisor"
    # VMware gives each vCPU its own socket by default; no sysfs topology in
    # this tree, so the counts come from cpuinfo alone.
    t.cpuinfo(2, "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz", "GenuineIntel",
              flags, [0, 2], 1, [0, 0])
    t.write("/proc/meminfo", "MemTotal:        8010460 kB\nMemFree:         7000000 kB\n")
    t.write("/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc hpet acpi_pm \n")
    t.dmi(sys_vendor="VMware, Inc.", product_name="VMware Virtual Platform",
          product_version="None", board_vendor="Intel Corporation",
          board_name="440BX Desktop Reference Platform", board_version="None",
          bios_vendor="Phoenix Technologies LTD", bios_version="6.00", bios_date="09/21/2015")

    host = "/sys/devices/pci0000:00/0000:00:15.0/0000:03:00.0/host2"
    sda = host + "/target2:0:0/2:0:0:0/block/sda"
    t.disk("sda", sda, "8:0", 83886080, rot=1)
    t.link(sda + "/device", host + "/target2:0:0/2:0:0:0")
    t.attrs(host + "/target2:0:0/2:0:0:0", vendor="VMware  ", model="Virtual disk    ", rev="1.0 ")
    t.part(sda, "sda1", 1, "8:1", 2048, 2097152)
    t.part(sda, "sda2", 2, "8:2", 2099200, 8388608)
    t.part(sda, "sda3", 3, "8:3", 10487808, 73398272)

    sdb = host + "/target2:0:1/2:0:1:0/block/sdb"
    t.disk("sdb", sdb, "8:16", 5860533168, pbs=4096, rot=1)
    dev = host + "/target2:0:1/2:0:1:0"
    t.link(sdb + "/device", dev)
    t.attrs(dev, vendor="ATA     ", model="TOSHIBA DT01ACA3", rev="ABB0",
            wwid="naa.5000039fe6d0a1b3")
    serial = b"          Z3GKYYYYGS"
    t.write(dev + "/vpd_pg80", bytes([0, 0x80, 0, len(serial)]) + serial, mode="wb")

    # The VM's CD-ROM and an unused loop device: hidden unless All.
    sr0 = "/sys/devices/pci0000:00/0000:00:07.1/ata2/host1/target1:0:0/1:0:0:0/block/sr0"
    t.disk("sr0", sr0, "11:0", 2097151, lbs=2048, pbs=2048, rot=1, removable=1)
    t.link(sr0 + "/device", "/sys/devices/pci0000:00/0000:00:07.1/ata2/host1/target1:0:0/1:0:0:0")
    t.attrs("/sys/devices/pci0000:00/0000:00:07.1/ata2/host1/target1:0:0/1:0:0:0",
            vendor="NECVMWar", model="VMware SATA CD00", rev="1.00")
    t.disk("loop0", "/sys/devices/virtual/block/loop0", "7:0", 0, rot=0)

    t.write("/proc/self/mountinfo",
            "20 1 8:3 / / rw,relatime shared:1 - xfs /dev/sda3 rw,seclabel,attr2,inode64,noquota\n"
            "60 20 8:1 / /boot rw,relatime shared:27 - xfs /dev/sda1 rw,seclabel,attr2,inode64,noquota\n")
    t.write("/proc/swaps", SWAPS_HEADER + "/dev/sda2                               partition\t4194300\t0\t-2\n")


def kvm():
    t = Tree("kvm-virtio")
    t.write("/proc/sys/kernel/hostname", "rocky9-vm\n")
    t.write("/proc/sys/kernel/osrelease", "5.14.0-427.13.1.el9_4.x86_64\n")
    t.write("/etc/os-release", '''NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"
ANSI_COLOR="0;32"
''')
    t.write("/etc/redhat-release", "Rocky Linux release 9.4 (Blue Onyx)\n")
    flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 syscall nx lm rep_good nopl cpuid pni ssse3 sse4_1 sse4_2 x2apic popcnt aes xsave avx hypervisor lahf_lm cmp_legacy"
    t.cpuinfo(4, "AMD EPYC-Milan Processor", "AuthenticAMD", flags, [0] * 4, 4, [0, 1, 2, 3])
    t.topology([0] * 4, [0, 1, 2, 3])
    t.write("/proc/meminfo", "MemTotal:       16082308 kB\nMemFree:        15000000 kB\n")
    t.write("/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "kvm-clock tsc hpet acpi_pm \n")
    # q35 machines leave the board_* strings out.
    t.dmi(sys_vendor="QEMU", product_name="Standard PC (Q35 + ICH9, 2009)",
          product_version="pc-q35-rhel9.4.0", bios_vendor="SeaBIOS",
          bios_version="1.16.3-2.el9", bios_date="04/01/2014")

    for name, slot, dev, sectors, serial in (("vda", "0000:00:02.1/0000:02:00.0", "252:0", 41943040, None),
                                            ("vdb", "0000:00:02.2/0000:03:00.0", "252:16", 209715200, "DATA01")):
        virtio = "/sys/devices/pci0000:00/%s/virtio%d" % (slot, 1 if name == "vda" else 2)
        bd = virtio + "/block/" + name
        t.disk(name, bd, dev, sectors, rot=1)
        t.link(bd + "/device", virtio)
        t.attrs(virtio, vendor="0x1af4", device="0x0002")
        if serial:
            t.attrs(bd, serial=serial)
    vda = "/sys/devices/pci0000:00/0000:00:02.1/0000:02:00.0/virtio1/block/vda"
    t.part(vda, "vda1", 1, "252:1", 2048, 1228800)
    t.part(vda, "vda2", 2, "252:2", 1230848, 2097152)
    t.part(vda, "vda3", 3, "252:3", 3328000, 38612992)
    t.disk("zram0", "/sys/devices/virtual/block/zram0", "251:0", 16777216, lbs=4096, pbs=4096)

    t.write("/proc/self/mountinfo",
            "22 1 252:3 / / rw,relatime shared:1 - xfs /dev/vda3 rw,seclabel,attr2,inode64,logbufs=8,logbsize=32k,noquota\n"
            "70 22 252:2 / /boot rw,relatime shared:34 - xfs /dev/vda2 rw,seclabel,attr2,inode64,noquota\n"
            "72 70 252:1 / /boot/efi rw,relatime shared:36 - vfat /dev/vda1 rw,fmask=0077,dmask=0077,codepage=437,iocharset=ascii,shortname=winnt,errors=remount-ro\n")
    t.write("/proc/swaps", SWAPS_HEADER)


def qemu():
    """A Debian guest of scripts/guest.sh under TCG: no udev database, disks
    given their own identity (model, serial, WWN, rotation rate) on QEMU's
    AHCI, virtio-scsi and virtio-blk, and a bcache device over a virtio disk
    with the SATA SSD as its cache. The attribute bytes are what the kernel
    (6.1, with the VPD pages of 5.19+) builds from what QEMU answers."""
    t = Tree("qemu-guest")
    t.write("/proc/sys/kernel/hostname", "diskprep-guest\n")
    t.write("/proc/sys/kernel/osrelease", "6.1.0-28-amd64\n")
    t.write("/etc/os-release", '''PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
''')
    flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss syscall nx pdpe1gb rdtscp lm constant_tsc nopl xtopology cpuid pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch"
    t.cpuinfo(2, "QEMU TCG CPU version 2.5+", "AuthenticAMD", flags, [0, 0], 2, [0, 1])
    t.topology([0, 0], [0, 1])
    t.write("/proc/meminfo", "MemTotal:        1004852 kB\nMemFree:          900000 kB\n")
    # TCG: no kvm-clock.
    t.write("/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc hpet acpi_pm \n")
    t.dmi(sys_vendor="QEMU", product_name="Standard PC (Q35 + ICH9, 2009)",
          product_version="pc-q35-8.2", bios_vendor="SeaBIOS",
          bios_version="1.16.3-debian-1.16.3-2", bios_date="04/01/2014")

    # AHCI SATA disks with a custom identity: QEMU still reports its own
    # firmware revision, 2.5+. sysfs model is the 16-byte INQUIRY product;
    # the full model is in vpd_pg89 and, without a WWN, in wwid.
    ahci = "/sys/devices/pci0000:00/0000:00:1f.2"
    for name, port, dev, sectors, rot, model, serial, rpm, wwn in (
            ("sda", 1, "8:0", 8388608, 1, "WDC WD40EFRX-68N32N0", "WD-WCC7K1234567", 7200, 0x50014ee2b1234567),
            ("sdb", 2, "8:16", 4194304, 0, "Samsung SSD 870 EVO 1TB", "S6PUNX0T123456A", 1, None)):
        h = port - 1
        scsi = "%s/ata%d/host%d/target%d:0:0/%d:0:0:0" % (ahci, port, h, h, h)
        bd = scsi + "/block/" + name
        t.disk(name, bd, dev, sectors, rot=rot)
        t.link(bd + "/device", scsi)
        ident = identify(model, serial, "2.5+", rpm=rpm, wwn=wwn)
        t.attrs(scsi, vendor="ATA     ", model=model[:16].ljust(16), rev="2.5+")
        if wwn is not None:
            t.attrs(scsi, wwid="naa.%016x" % wwn)
        else:
            t.attrs(scsi, wwid="t10.ATA     %s%s" % (model.ljust(40), serial.ljust(20)))
        t.write(scsi + "/vpd_pg80", vpd_pg80(serial.ljust(20)), mode="wb")
        t.write(scsi + "/vpd_pg89", vpd_pg89(ident), mode="wb")
        t.write(scsi + "/vpd_pgb1", vpd_pgb1(rpm), mode="wb")

    # virtio-scsi scsi-hd with a product and serial of its own but no WWN:
    # vendor stays QEMU, page 0x83 holds only a vendor-specific designator,
    # so reading wwid fails with EINVAL (the test makes it fail so); B1 is
    # there with rotation rate 0, "not reported".
    scsi = "/sys/devices/pci0000:00/0000:00:03.0/virtio1/host2/target2:0:0/2:0:0:0"
    sdc = scsi + "/block/sdc"
    t.disk("sdc", sdc, "8:32", 4194304, rot=1)
    t.link(sdc + "/device", scsi)
    t.attrs(scsi, vendor="QEMU    ", model="ST4000NM0035    ", rev="2.5+")
    t.write(scsi + "/wwid", "")
    t.write(scsi + "/vpd_pg80", vpd_pg80("ZC1A2B3C"), mode="wb")
    t.write(scsi + "/vpd_pgb1", vpd_pgb1(0), mode="wb")

    # A second scsi-hd that was given a vendor too, and a WWN and a rotation
    # rate: only the firmware revision still says QEMU.
    scsi = "/sys/devices/pci0000:00/0000:00:03.0/virtio1/host2/target2:0:1/2:0:1:0"
    sdd = scsi + "/block/sdd"
    t.disk("sdd", sdd, "8:48", 8388608, rot=1)
    t.link(sdd + "/device", scsi)
    t.attrs(scsi, vendor="SEAGATE ", model="ST4000NM0035    ", rev="2.5+",
            wwid="naa.5000c500a1b2c3d4")
    t.write(scsi + "/vpd_pg80", vpd_pg80("ZC1A2B3D"), mode="wb")
    t.write(scsi + "/vpd_pgb1", vpd_pgb1(7200), mode="wb")

    # virtio-blk: nothing says whether it rotates; the kernel's default
    # rotational=1 is no answer.
    for name, slot, n, dev, sectors, serial in (("vda", "04", 2, "252:0", 2097152, "VIRT0001"),
                                               ("vdb", "05", 3, "252:16", 8388608, None)):
        virtio = "/sys/devices/pci0000:00/0000:00:%s.0/virtio%d" % (slot, n)
        bd = virtio + "/block/" + name
        t.disk(name, bd, dev, sectors, rot=1)
        t.link(bd + "/device", virtio)
        t.attrs(virtio, vendor="0x1af4", device="0x0002")
        if serial:
            t.attrs(bd, serial=serial)

    # bcache0: vdb is its backing device, sdb the cache of its cache set.
    # Both are its slaves and have it as holder (bcache_device_link); the
    # bcache directories tell them apart, as a 6.1 guest has them: the
    # backing device's bcache/cache is the cache set, whose cacheN are the
    # caches' bcache directories, bdevN the backing devices', whose dev is
    # the bcache device; a cache's bcache/set links back to the set.
    vdb = "/sys/devices/pci0000:00/0000:00:05.0/virtio3/block/vdb"
    sdb = ahci + "/ata2/host1/target1:0:0/1:0:0:0/block/sdb"
    bc = "/sys/devices/virtual/block/bcache0"
    t.disk("bcache0", bc, "250:0", 8388608 - 16, rot=0)
    for lower in (vdb, sdb):
        t.link(bc + "/slaves/" + os.path.basename(lower), lower)
        t.link(lower + "/holders/bcache0", bc)
    t.attrs(vdb + "/bcache", state="clean", cache_mode="writethrough [writeback] writearound none")
    t.link(bc + "/bcache", vdb + "/bcache")
    cset = "/sys/fs/bcache/5e2c8f0a-41d7-4b6e-9c3a-0d8e7f6a5b4c"
    t.attrs(cset, block_size="512")
    t.link(vdb + "/bcache/cache", cset)
    t.link(vdb + "/bcache/dev", bc)
    t.attrs(sdb + "/bcache", bucket_size="512.0k")
    t.link(sdb + "/bcache/set", cset)
    t.link(cset + "/cache0", sdb + "/bcache")
    t.link(cset + "/bdev0", vdb + "/bcache")

    t.write("/proc/self/mountinfo",
            "1 1 0:2 / / rw - rootfs rootfs rw\n"
            "20 1 0:20 / /proc rw,relatime - proc proc rw\n"
            "21 1 0:21 / /sys rw,relatime - sysfs sysfs rw\n")
    t.write("/proc/swaps", SWAPS_HEADER)


if __name__ == "__main__":
    desktop()
    vmware()
    kvm()
    qemu()
