"""moto's server (python -m moto.server arguments), with one difference from moto 5.2 put
right: AWS takes a security group rule for an IP protocol without ports (ESP, 50) without
FromPort/ToPort, and describes it without them; moto calls int() on the missing ports and
answers 500. Such a rule is built here as moto builds one for every protocol (-1), then
given its protocol back."""

import sys

from moto.ec2.models import security_groups
from moto.server import main

_PORTED = {"tcp", "6", "udp", "17", "icmp", "1", "icmpv6", "58", "-1", "all"}
_init = security_groups.SecurityGroupRule.__init__


def _portless_init(self, ec2_backend, ip_protocol, group_id, from_port, to_port, *args, **kwargs):
    portless = ip_protocol is not None and str(ip_protocol).lower() not in _PORTED and from_port is None
    _init(self, ec2_backend, "-1" if portless else ip_protocol, group_id, from_port, to_port, *args, **kwargs)
    if portless:
        self.ip_protocol = str(ip_protocol)


security_groups.SecurityGroupRule.__init__ = _portless_init

if __name__ == "__main__":
    sys.exit(main())
