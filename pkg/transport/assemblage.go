package transport

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// FormatV1 is the assemblage format this package writes: a JSON Document, gzip-compressed.
const FormatV1 = "edge.kcp.io/gzip-json-v1"

// Formats are the assemblage formats this package reads, newest first. A syncer reports them in
// its SyncerConfig's status.formats.
var Formats = []string{FormatV1}

// KnowsFormat reports whether this package reads format.
func KnowsFormat(format string) bool {
	for _, f := range Formats {
		if f == format {
			return true
		}
	}
	return false
}

// Size bounds.
const (
	// PieceBytes is the most compressed bytes one Assemblage or AssemblagePart holds: a quarter of
	// a MiB, so that no object comes near etcd's limit of 1.5 MiB, base64 included.
	PieceBytes = 256 << 10
	// MaxParts bounds the pieces of one assemblage (64 MiB of compressed objects): past it, the
	// placement selects too much for one destination.
	MaxParts = 256
	// MaxObjectBytes is the largest object, as JSON, that travels: an edge cluster's etcd holds
	// no larger object (its default request limit is 1.5 MiB).
	MaxObjectBytes = 3 << 19
	// MaxDocumentBytes bounds a whole document, uncompressed, so that a syncer never inflates
	// more than this from its mailbox.
	MaxDocumentBytes = 256 << 20
)

// Document is what one assemblage carries.
type Document struct {
	Objects []Entry `json:"objects"`
}

// Entry is one object of a Document, with its resource, so that the syncer needs no discovery
// to write it.
type Entry struct {
	Group      string `json:"group,omitempty"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Namespaced bool   `json:"namespaced,omitempty"`
	// Object is the object, customised for the destination; a denatured object is in its
	// denatured form. Of a sealed entry, only what Seal leaves in the clear.
	Object map[string]any `json:"object"`
	// Sealed holds the rest of a sealed entry's object, encrypted (seal.go); nil if the entry
	// travels in the clear.
	Sealed *Sealed `json:"sealed,omitempty"`
}

// GVR is the entry's resource.
func (e *Entry) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: e.Group, Version: e.Version, Resource: e.Resource}
}

// Key is the entry's object key.
func (e *Entry) Key() Key {
	k := Key{Group: e.Group, Resource: e.Resource}
	if md, ok := e.Object["metadata"].(map[string]any); ok {
		k.Name, _ = md["name"].(string)
		if e.Namespaced {
			k.Namespace, _ = md["namespace"].(string)
		}
	}
	return k
}

// applyRank orders the objects of a document: CRDs, then namespaces, then the rest.
func applyRank(k Key) int {
	switch {
	case k.Group == "apiextensions.k8s.io" && k.Resource == "customresourcedefinitions":
		return 0
	case k.Group == "" && k.Resource == "namespaces":
		return 1
	}
	return 2
}

// SortEntries puts entries in apply order: CRDs first, then namespaces, then the rest, each by
// key. A document is encoded in this order, so that equal content is equal bytes.
func SortEntries(entries []Entry) {
	sort.SliceStable(entries, func(i, j int) bool {
		ki, kj := entries[i].Key(), entries[j].Key()
		if ri, rj := applyRank(ki), applyRank(kj); ri != rj {
			return ri < rj
		}
		return ki.String() < kj.String()
	})
}

// Encoded is a document ready to be written.
type Encoded struct {
	// Version is the hash of the canonical uncompressed document.
	Version string
	// Pieces are the compressed document cut into pieces of at most PieceBytes; Digests their
	// hashes.
	Pieces  [][]byte
	Digests []string
	// Objects are the keys of the entries, in order.
	Objects []string
	// RawBytes and CompressedBytes are the document's sizes.
	RawBytes, CompressedBytes int
}

// TooLargeError says that an object is too large to travel.
type TooLargeError struct {
	Key   Key
	Bytes int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes as JSON; an object travels to the edge only up to %d bytes (what an edge cluster's etcd holds): make it smaller or split it",
		e.Key, e.Bytes, MaxObjectBytes)
}

// CheckSize returns a *TooLargeError if the entry's object is too large to travel.
func CheckSize(e *Entry) error {
	data, err := json.Marshal(e.Object)
	if err != nil {
		return fmt.Errorf("%s cannot be written as JSON: %w", e.Key(), err)
	}
	if len(data) > MaxObjectBytes {
		return &TooLargeError{Key: e.Key(), Bytes: len(data)}
	}
	return nil
}

// gzipWriters are reused: a new gzip writer allocates its compressor's tables, about a megabyte,
// and the translator encodes every destination's assemblage on each pass (a quarter of
// edge-controller-manager's CPU, most of it allocation and garbage collection, when it was not
// reused). A reset writer writes the same bytes as a new one.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// compress gzips raw with zw, reset to write into a new buffer.
func compress(raw []byte, zw *gzip.Writer) ([]byte, error) {
	var buf bytes.Buffer
	zw.Reset(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Encode encodes entries, which it sorts in apply order, as a FormatV1 document.
func Encode(entries []Entry) (*Encoded, error) {
	SortEntries(entries)
	raw, err := json.Marshal(Document{Objects: entries})
	if err != nil {
		return nil, fmt.Errorf("encoding an assemblage: %w", err)
	}
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	compressed, err := compress(raw, zw)
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxDocumentBytes || len(compressed) > MaxParts*PieceBytes {
		return nil, fmt.Errorf("the objects for this destination take %d bytes (%d compressed), more than an assemblage carries (%d bytes, %d compressed): split the placement",
			len(raw), len(compressed), MaxDocumentBytes, MaxParts*PieceBytes)
	}
	out := &Encoded{Version: hashBytes(raw), RawBytes: len(raw), CompressedBytes: len(compressed)}
	for start := 0; start < len(compressed); start += PieceBytes {
		piece := compressed[start:min(start+PieceBytes, len(compressed))]
		out.Pieces = append(out.Pieces, piece)
		out.Digests = append(out.Digests, hashBytes(piece))
	}
	for i := range entries {
		out.Objects = append(out.Objects, entries[i].Key().String())
	}
	return out, nil
}

// Digest is the digest of a piece of a document, as in spec.digest.
func Digest(piece []byte) string { return hashBytes(piece) }

// hashBytes is the version and digest function: the first 16 hex digits of SHA-256.
func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Reasons for refusing an assemblage (RefusedError.Reason), as on its Refused condition.
const (
	RefusedUnknownFormat = edgev1alpha1.ReasonUnknownFormat
	RefusedCorrupt       = edgev1alpha1.ReasonCorrupt
	RefusedPartsMissing  = edgev1alpha1.ReasonPartsMissing
)

// RefusedError says why an assemblage cannot be read as a whole. With PartsMissing the parts
// may still be on their way; the others do not go away until the assemblage is written again.
type RefusedError struct {
	Reason  string
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

func refused(reason, format string, args ...any) *RefusedError {
	return &RefusedError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Pieces gathers the pieces of a's current version from a and parts (any parts of the mailbox;
// those of other assemblages or versions are ignored), in order, each checked against its
// digest.
func Pieces(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) ([][]byte, error) {
	name := a.Name
	if a.Spec.Parts < 1 || a.Spec.Parts > MaxParts {
		return nil, refused(RefusedCorrupt, "assemblage %s says it has %d parts; an assemblage has 1 to %d", name, a.Spec.Parts, MaxParts)
	}
	pieces := make([][]byte, a.Spec.Parts)
	digests := make([]string, a.Spec.Parts)
	pieces[0], digests[0] = a.Spec.Data, a.Spec.Digest
	found := 1
	for _, p := range parts {
		if p.Spec.Assemblage != name || p.Spec.Version != a.Spec.Version {
			continue
		}
		i := int(p.Spec.Index)
		if i < 1 || i >= len(pieces) || pieces[i] != nil {
			continue
		}
		pieces[i], digests[i] = p.Spec.Data, p.Spec.Digest
		found++
	}
	if found < len(pieces) {
		var missing []string
		for i := 1; i < len(pieces); i++ {
			if pieces[i] == nil {
				missing = append(missing, PartName(name, i))
			}
		}
		return nil, refused(RefusedPartsMissing, "assemblage %s version %s lacks %d of its %d parts (%v)", name, a.Spec.Version, len(missing), len(pieces), missing)
	}
	for i := range pieces {
		if hashBytes(pieces[i]) != digests[i] {
			where := name
			if i > 0 {
				where = PartName(name, i)
			}
			return nil, refused(RefusedCorrupt, "the data of %s does not match its digest %q", where, digests[i])
		}
	}
	return pieces, nil
}

// Decode reads an assemblage's document from its pieces: it must be in a known format and hash
// to version. It refuses as a whole what does not.
func Decode(format, version string, pieces [][]byte) (*Document, error) {
	if !KnowsFormat(format) {
		return nil, refused(RefusedUnknownFormat, "format %q is unknown to this syncer (it reads %v): upgrade the syncer", format, Formats)
	}
	zr, err := gzip.NewReader(io.MultiReader(readers(pieces)...))
	if err != nil {
		return nil, refused(RefusedCorrupt, "the data is not gzip-compressed: %v", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, MaxDocumentBytes+1))
	if err != nil {
		return nil, refused(RefusedCorrupt, "the data does not decompress: %v", err)
	}
	if len(raw) > MaxDocumentBytes {
		return nil, refused(RefusedCorrupt, "the data inflates to more than %d bytes, more than any assemblage holds", MaxDocumentBytes)
	}
	if got := hashBytes(raw); got != version {
		return nil, refused(RefusedCorrupt, "the data hashes to %s, not to the version %s", got, version)
	}
	doc := &Document{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(doc); err != nil {
		return nil, refused(RefusedCorrupt, "the data is not a document of format %s: %v", format, err)
	}
	for i := range doc.Objects {
		e := &doc.Objects[i]
		if err := normalizeNumbers(e.Object); err != nil {
			return nil, refused(RefusedCorrupt, "object %d: %v", i, err)
		}
		if e.Resource == "" || e.Version == "" || e.Key().Name == "" || (e.Namespaced && e.Key().Namespace == "") {
			return nil, refused(RefusedCorrupt, "object %d (%s) lacks its resource, version, name or namespace", i, e.Key())
		}
	}
	return doc, nil
}

// DecodeAssemblage is Pieces and Decode.
func DecodeAssemblage(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) (*Document, error) {
	if !KnowsFormat(a.Spec.Format) {
		// Said first: a syncer that cannot read the format cannot judge the rest either.
		return nil, refused(RefusedUnknownFormat, "assemblage %s version %s: format %q is unknown to this syncer (it reads %v): upgrade the syncer",
			a.Name, a.Spec.Version, a.Spec.Format, Formats)
	}
	pieces, err := Pieces(a, parts)
	if err != nil {
		return nil, err
	}
	doc, err := Decode(a.Spec.Format, a.Spec.Version, pieces)
	if err != nil {
		var r *RefusedError
		if errors.As(err, &r) {
			r.Message = fmt.Sprintf("assemblage %s version %s: %s", a.Name, a.Spec.Version, r.Message)
		}
		return nil, err
	}
	return doc, nil
}

func readers(pieces [][]byte) []io.Reader {
	out := make([]io.Reader, len(pieces))
	for i, p := range pieces {
		out[i] = bytes.NewReader(p)
	}
	return out
}

// normalizeNumbers turns the json.Numbers of a decoded object into int64 or float64, as objects
// read from a server have them, so that the edge gets integers where the source had integers.
func normalizeNumbers(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if n, ok := x.(json.Number); ok {
				num, err := numberValue(n)
				if err != nil {
					return err
				}
				v[k] = num
				continue
			}
			if err := normalizeNumbers(x); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if n, ok := x.(json.Number); ok {
				num, err := numberValue(n)
				if err != nil {
					return err
				}
				v[i] = num
				continue
			}
			if err := normalizeNumbers(x); err != nil {
				return err
			}
		}
	}
	return nil
}

func numberValue(n json.Number) (any, error) {
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("bad number %q", n)
	}
	return f, nil
}

// PartsOf decodes the assemblage parts of a list (as read from a mailbox); items that are no
// part are left out, as Pieces leaves out parts of other assemblages or versions.
func PartsOf(items []unstructured.Unstructured) []*edgev1alpha1.AssemblagePart {
	var parts []*edgev1alpha1.AssemblagePart
	for i := range items {
		p := &edgev1alpha1.AssemblagePart{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, p); err == nil {
			parts = append(parts, p)
		}
	}
	return parts
}
