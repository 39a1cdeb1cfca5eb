#include "sim/shared_links.h"

#include <algorithm>
#include <limits>

#include "ir/error.h"

namespace tandem {

SharedLinks::SharedLinks(const Cluster& cluster, int replicas)
    : base_links_(static_cast<int>(cluster.links.size())) {
  link_of_.resize(static_cast<size_t>(replicas) * base_links_);
  for (int r = 0; r < replicas; ++r) {
    for (int l = 0; l < base_links_; ++l) {
      const LinkSpec& spec = cluster.links[l];
      const bool shared = spec.kind == LinkKind::kNetwork;
      if (shared && r > 0) {
        link_of_[r * base_links_ + l] = link_of_[l];
        continue;
      }
      link_of_[r * base_links_ + l] = static_cast<int>(links_.size());
      Link link;
      link.name = (replicas > 1 && !shared ? "r" + std::to_string(r) + "/" : "") + spec.from + "-" +
                  spec.to;
      link.base = l;
      links_.push_back(std::move(link));
      Channel backward, forward;
      backward.bandwidth = spec.bandwidth_backward.value;
      forward.bandwidth = spec.bandwidth_forward.value;
      channels_.push_back(backward);
      channels_.push_back(forward);
    }
  }
}

void SharedLinks::advance(Channel& channel, double now) {
  if (!channel.active.empty()) {
    const double moved =
        (now - channel.last) * channel.bandwidth / static_cast<double>(channel.active.size());
    for (Active& active : channel.active) active.remaining -= moved;
  }
  channel.last = now;
}

void SharedLinks::schedule(int index, double now, EventQueue& events) {
  Channel& channel = channels_[index];
  ++channel.version;
  if (channel.active.empty()) return;
  double least = std::numeric_limits<double>::infinity();
  for (const Active& active : channel.active) least = std::min(least, active.remaining);
  const double seconds =
      std::max(least, 0.0) * static_cast<double>(channel.active.size()) / channel.bandwidth;
  events.push(
      {now + seconds, EventKind::kLinkDue, static_cast<uint32_t>(index), channel.version, 0});
}

void SharedLinks::count(int link, int delta, double now) {
  Link& state = links_[link];
  if (state.active == 0 && delta > 0) state.since = now;
  state.active += delta;
  if (state.active == 0) state.busy += now - state.since;
}

void SharedLinks::join(int index, int transfer, double bytes, double now, EventQueue& events) {
  Channel& channel = channels_[index];
  if (channel.bandwidth <= 0)
    throw InputError(links_[index / 2].name,
                     "a transfer's path crosses it in a direction "
                     "without a bandwidth");
  advance(channel, now);
  channel.active.push_back({transfer, bytes});
  count(index / 2, +1, now);
  schedule(index, now, events);
}

bool SharedLinks::due(int index, uint32_t version, double now, EventQueue& events,
                      std::vector<int>& finished) {
  Channel& channel = channels_[index];
  if (version != channel.version) return false;
  advance(channel, now);
  double least = std::numeric_limits<double>::infinity();
  for (const Active& active : channel.active) least = std::min(least, active.remaining);
  // Transfers that finish together (within rounding of the time) leave together.
  const double share = channel.bandwidth / static_cast<double>(channel.active.size());
  const double tolerance = least + share * 1e-12 * std::max(now, 1.0);
  auto done = std::stable_partition(channel.active.begin(), channel.active.end(),
                                    [&](const Active& a) { return a.remaining > tolerance; });
  const int leaving = static_cast<int>(channel.active.end() - done);
  for (auto it = done; it != channel.active.end(); ++it) finished.push_back(it->transfer);
  channel.active.erase(done, channel.active.end());
  count(index / 2, -leaving, now);
  schedule(index, now, events);
  return true;
}

int SharedLinks::take_lane(int channel, Timeline& timeline) {
  Link& link = links_[channel / 2];
  for (auto& [track, taken] : link.lanes) {
    if (!taken) {
      taken = true;
      return track;
    }
  }
  const std::string suffix = link.lanes.empty() ? "" : " #" + std::to_string(link.lanes.size() + 1);
  const int track = timeline.add_track(link.name + suffix, "link " + link.name);
  link.lanes.push_back({track, true});
  return track;
}

void SharedLinks::give_lane(int channel, int track) {
  for (auto& [lane, taken] : links_[channel / 2].lanes) {
    if (lane == track) taken = false;
  }
}

std::vector<LinkActivity> SharedLinks::activity(double now) const {
  std::vector<LinkActivity> result;
  for (const Link& link : links_) {
    const double open = link.active > 0 ? now - link.since : 0;
    result.push_back({link.name, link.base, link.bytes, link.busy + open});
  }
  return result;
}

}  // namespace tandem
