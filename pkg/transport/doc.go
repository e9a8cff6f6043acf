// Package transport is the contract between edge-mc's center and its edges: what the placement
// translator writes into a mailbox workspace and the syncer reads from it. Both import it, and
// neither imports the other's controllers.
//
// It holds:
//   - the assemblage encoding (assemblage.go): the objects one EdgePlacement delivers to one
//     destination, as a canonical JSON document, versioned by its hash, gzip-compressed and cut
//     into pieces that fit in an Assemblage and its AssemblageParts, and the checks that refuse a
//     document as a whole (an unknown format, a missing part, a digest or version that does not
//     match);
//   - object keys (Key): <resource>.<group>/<namespace>/<name>, the names by which assemblages,
//     their status and placement summaries list objects;
//   - the mailbox layout (names.go): mailbox workspace names, the syncer's identity and
//     heartbeat, assemblage names;
//   - what travels and how (objects.go): objects that never travel, server-owned fields stripped
//     before an object travels, denatured objects and their natural form, content hashes;
//   - sealed objects (seal.go): Secrets, and objects annotated edge.kcp.io/sealed: "true",
//     travel with their content encrypted to the destination syncer's public key; the syncer's
//     key pair, key ids, and the opening of a sealed entry at the edge;
//   - the marks by which a syncer owns the objects it applies at its edge (marks.go);
//   - how an assemblage's status reads for people and summaries (summary.go): each object's
//     state at a destination, whether a version of it runs there, and the bounded summary of a
//     placement over its destinations that the status summarizer writes and kubectl edge shows.
package transport
