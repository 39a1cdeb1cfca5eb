#pragma once
#include <string>
#include <utility>
#include <vector>

#include "devices/cluster.h"
#include "report/timeline.h"
#include "sim/event_queue.h"
#include "sim/simulator.h"

namespace tandem {

// The links of a (replicated) cluster as the simulator sees them: each direction of a link is a
// channel whose bandwidth is shared fairly by the transfers on it (k transfers get 1/k each;
// finish times are recomputed whenever k changes). Replicas get their own copies of the links
// within hosts and share the network links between hosts.
class SharedLinks {
 public:
  SharedLinks(const Cluster& cluster, int replicas);

  // The channel a replica's transfer uses to cross `hop`.
  int channel(int replica, const Cluster::Hop& hop) const {
    return 2 * link_of_[replica * base_links_ + hop.link] + (hop.forward ? 1 : 0);
  }
  // A transfer starts crossing the channel with `bytes` to move.
  void join(int channel, int transfer, double bytes, double now, EventQueue& events);
  // A kLinkDue event: when it is still current, the transfers that have finished go into
  // `finished` and the channel's next due event is queued. False when the event is stale.
  bool due(int channel, uint32_t version, double now, EventQueue& events,
           std::vector<int>& finished);
  void add_bytes(int channel, double bytes) { links_[channel / 2].bytes += bytes; }

  // Timeline tracks: a transfer takes the link's first free lane (a track), so that concurrent
  // transfers never overlap on one track.
  int take_lane(int channel, Timeline& timeline);
  void give_lane(int channel, int track);

  std::vector<LinkActivity> activity(double now) const;

 private:
  struct Active {
    int transfer;
    double remaining;
  };
  struct Channel {
    double bandwidth = 0;
    double last = 0;
    uint32_t version = 0;
    std::vector<Active> active;
  };
  struct Link {
    std::string name;
    int base = 0;
    int active = 0;  // transfers on it, both directions
    double since = 0, busy = 0, bytes = 0;
    std::vector<std::pair<int, bool>> lanes;  // track, taken
  };

  void advance(Channel& channel, double now);
  void schedule(int index, double now, EventQueue& events);
  void count(int link, int delta, double now);

  int base_links_ = 0;
  std::vector<int> link_of_;  // per replica and cluster link: the simulated link
  std::vector<Link> links_;
  std::vector<Channel> channels_;
};

}  // namespace tandem
