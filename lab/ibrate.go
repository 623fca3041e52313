package lab

import (
	"fmt"
	"strconv"

	"github.com/emufabric/emufabric/mad"
)

// checkIBRates warns about an IB link rate that no port reports. The
// subnet management agents (the simulator's, emuswitch's and emunic's)
// give a port's width and speed in PortInfo as the standard 4X link
// closest below its rate (mad.LinkFor; IBA 14.2.5.6 has no field for any
// other rate), and the SM, ibstat and ibnetdiscover print what they give:
// a 37G link shows as Rate 20 (4X DDR) while its packets go at 37G.
func (d *decoder) checkIBRates(s *Spec) {
	if s.Fabric != FabricIB {
		return
	}
	check := func(path string, bps uint64) {
		w, sp, ext := mad.LinkFor(bps)
		f := mad.PortInfoFields{LinkWidthActive: w, LinkSpeedActive: sp, LinkSpeedExtActive: ext}
		if got := f.RateGbps(); got*1e9 != float64(bps) {
			d.warnf(path, "%s is not a rate an InfiniBand port reports: the subnet manager, ibstat (emulab ib ports) and ibnetdiscover show Rate %s, the 4X link below it, while packets go at %s; ports report 2.5G (1X SDR) and 10G, 20G, 40G, 56G, 100G, 200G (4X SDR to HDR)",
				FormatRate(bps), strconv.FormatFloat(got, 'g', -1, 64), FormatRate(bps))
		}
	}
	if p := "topology.defaults.rate"; d.written(p) {
		check(p, s.Defaults.Rate)
	}
	for _, l := range s.Links {
		if p := fmt.Sprintf("topology.links[%d].rate", l.Index); d.written(p) {
			check(p, l.Rate)
		}
	}
}
