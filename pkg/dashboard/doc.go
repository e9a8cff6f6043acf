// Package dashboard serves kubectl edge dashboard: a read-only web page of the fleet, on
// loopback, with the user's own kubeconfig credentials, so it shows what they can see and nothing
// more.
//
// Three pages, each read when it is asked for (get, list and watch, nothing else):
//   - the fleet (/): per workload workspace its EdgePlacements with their destinations by state,
//     as bars and as text; rollouts in progress; stale edges and broken objects first;
//   - a placement (/placement/<wmw>/<name>): summary, conditions, rollout, the collected status
//     of its StatusCollectors, and its destinations, each with its state from the assemblage in
//     its mailbox, filtered, sorted and paged by the server from query parameters, so the table
//     works without JavaScript;
//   - an edge cluster (/edge/<imw>/<name>): its SyncTarget and Locations' labels, heartbeat,
//     syncer version, mailbox and shard, and its assemblages with every object's state.
//
// What grows with the fleet (a workload workspace's SinglePlacementSlices, an inventory
// workspace's SyncTargets and Locations, each destination's assemblage of a placement whose page
// is read) is
// kept in memory by mirrors: a list, then a watch, started by the first page that needs it and
// stopped after ten minutes unread (mirror.go). A mirror whose watch failed gives its error, not
// its old values, until it has listed again; and every page still reads one object from kcp on
// each load (the placement, or the fleet's placements), so that a kcp that stops answering
// shows at once; a placement's page costs kcp the same at 10 destinations as at 1,000 once its
// mirrors run.
//
// Live: /events?page=<a page's URL> is a stream of server-sent events. For as long as a page is
// open it watches (the watch verb, nothing polled) what that page shows, and sends "change" a
// moment after any of it changes; the page's script then fetches the page's live part again
// (?fragment=1) and swaps it in. When kcp cannot be read, the stream sends "problem", and the
// page shows a banner saying what failed and when its data was last current, in place of the
// data: a page never shows an old picture as if it were current. It keeps trying on its own.
//
// Stack: Go's html/template, one stylesheet and one small plain script, all embedded in the
// binary with go:embed: no toolchain from npm, nothing fetched from the internet, and pages that
// are complete without JavaScript (live updates aside).
package dashboard
