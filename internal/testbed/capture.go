package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"tlab/internal/results"
)

// startCaptures writes one pcap per host interface into dir, named
// HOST-IFACE.pcap, with nanosecond kernel timestamps: what the host itself
// sent and received, as Wireshark would see it on that host.
func (tb *Testbed) startCaptures(dir string) error {
	if err := results.Mkdir(dir); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	for _, h := range tb.Hosts() {
		for _, ifc := range h.Ifaces {
			var handle *pcapgo.EthernetHandle
			err := h.Do(func() (err error) {
				handle, err = pcapgo.NewEthernetHandle(ifc.Name)
				return err
			})
			if err != nil {
				return fmt.Errorf("capture %s/%s: %w", h.Name, ifc.Name, err)
			}
			path := filepath.Join(dir, h.Name+"-"+ifc.Name+".pcap")
			f, err := results.Create(path)
			if err != nil {
				handle.Close()
				return fmt.Errorf("capture: %w", err)
			}
			bw := bufio.NewWriterSize(f, 1<<20)
			w := pcapgo.NewWriterNanos(bw)
			if err := w.WriteFileHeader(uint32(tb.opts.MTU+64), layers.LinkTypeEthernet); err != nil {
				handle.Close()
				f.Close()
				return fmt.Errorf("capture %s: %w", path, err)
			}
			done := make(chan error, 1)
			go func() {
				for {
					data, ci, err := handle.ReadPacketData()
					if err != nil {
						done <- nil // closed
						return
					}
					if err := w.WritePacket(ci, data); err != nil {
						done <- err
						return
					}
				}
			}()
			tb.onClose(func() error {
				handle.Close()
				werr := <-done
				ferr := bw.Flush()
				cerr := f.Close()
				if err := errors.Join(werr, ferr, cerr); err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("capture %s: %w", path, err)
				}
				return nil
			})
		}
	}
	return nil
}
