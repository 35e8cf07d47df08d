package policyroute

import (
	"encoding/binary"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// linkIndex asks the kernel for one interface's index by name. The netlink library's LinkByName decodes every
// attribute and statistic of the link, which costs more than the rest of a small Request.
func (w *rtnlConn) linkIndex(name string) (int, error) {
	w.seq++
	seq := w.seq
	info := make([]byte, unix.SizeofIfInfomsg)
	nameAttr := nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name))
	if len(name) >= unix.IFNAMSIZ {
		nameAttr = nl.NewRtAttr(unix.IFLA_ALT_IFNAME, nl.ZeroTerminated(name))
	}
	payload := append(info, nameAttr.Serialize()...)
	request := appendMessage(nil, &writeOp{msgType: unix.RTM_GETLINK, payload: payload}, seq, false)
	if err := unix.Sendto(w.socket.GetFd(), request, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	for {
		replies, err := w.receive()
		if err != nil {
			return 0, err
		}
		for i := range replies {
			if replies[i].Header.Seq != seq {
				continue
			}
			switch replies[i].Header.Type {
			case unix.NLMSG_ERROR:
				if len(replies[i].Data) >= 4 {
					if errno := unix.Errno(-int32(binary.NativeEndian.Uint32(replies[i].Data[:4]))); errno != 0 {
						return 0, errno
					}
				}
			case unix.RTM_NEWLINK:
				if len(replies[i].Data) >= unix.SizeofIfInfomsg {
					return int(int32(binary.NativeEndian.Uint32(replies[i].Data[4:8]))), nil
				}
			}
		}
	}
}
