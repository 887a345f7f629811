package e2b

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
)

// writeInfo describes an uploaded file as envd's POST /files answers it.
type writeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"` // always "file"
	Path string `json:"path"`
}

// upload writes the files of a POST /files request. The e2b SDK sends
// one file as an application/octet-stream body with ?path= when asked
// for a stream or gzip, and otherwise (also for one file) a
// multipart/form-data body whose "file" parts carry each file's path as
// their filename.
func (a *API) upload(w http.ResponseWriter, r *http.Request) {
	body, err := decodedBody(r)
	if err != nil {
		replyError(w, err)
		return
	}
	mediaType, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "multipart/form-data" && mediaType != "application/octet-stream" && mediaType != "" {
		replyErrorStatus(w, http.StatusBadRequest, fmt.Sprintf("cannot upload a %s body: send the file as application/octet-stream with ?path=, or as multipart/form-data with one \"file\" part per file", mediaType))
		return
	}
	rn, err := a.open(r.Context(), r.Header, opUpload)
	if err != nil {
		replyError(w, err)
		return
	}
	var infos []writeInfo
	if mediaType == "multipart/form-data" {
		infos, err = a.uploadParts(r.Context(), rn, multipart.NewReader(body, params["boundary"]), r.URL.Query().Get("path"))
	} else {
		infos, err = a.uploadBody(r, rn, body)
	}
	if err != nil {
		replyError(w, err)
		return
	}
	replyJSON(w, http.StatusOK, infos)
}

// decodedBody is the request's body without its Content-Encoding: the
// SDK gzips an octet-stream upload when asked to.
func decodedBody(r *http.Request) (io.Reader, error) {
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
		return r.Body, nil
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, fmt.Errorf("read the gzip-encoded upload: %v; send valid gzip or drop Content-Encoding: %w", err, ErrInvalid)
		}
		return zr, nil
	default:
		return nil, fmt.Errorf("cannot decode an upload in Content-Encoding %q; send it as gzip or unencoded: %w", enc, ErrInvalid)
	}
}

// uploadBody writes an octet-stream body to ?path=.
func (a *API) uploadBody(r *http.Request, rn Runner, body io.Reader) ([]writeInfo, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return nil, fmt.Errorf("the path query parameter is missing; pass the destination, e.g. /files?path=/workspace/data.csv: %w", ErrInvalid)
	}
	size := int64(-1)
	if r.Header.Get("Content-Encoding") == "" {
		size = r.ContentLength
	}
	info, err := a.uploadFile(r.Context(), rn, p, body, size)
	if err != nil {
		return nil, err
	}
	return []writeInfo{info}, nil
}

// uploadParts writes every "file" part of a multipart body. Each file is
// one runner call of its own, because its path arrives with the part,
// after the call's audit record would have had to name it. A failure
// stops the upload; files written before it stay.
func (a *API) uploadParts(ctx context.Context, rn Runner, mr *multipart.Reader, queryPath string) ([]writeInfo, error) {
	var infos []writeInfo
	seen := map[string]bool{}
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the multipart upload: %v; send a well-formed multipart/form-data body: %w", err, ErrInvalid)
		}
		if part.FormName() != "file" {
			continue
		}
		p := queryPath
		if p == "" {
			p = partPath(part)
		}
		switch {
		case p == "":
			return nil, fmt.Errorf("a file part has no path: pass ?path= or give the part a filename holding the destination path: %w", ErrInvalid)
		case seen[p]:
			return nil, fmt.Errorf("the upload holds more than one file for %s; with ?path= send one file, or drop ?path= and name each part by its own path: %w", p, ErrInvalid)
		}
		seen[p] = true
		info, err := a.uploadFile(ctx, rn, p, part, -1)
		if err != nil {
			return nil, err
		}
		infos = append(infos, info)
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("the multipart upload holds no \"file\" part; send each file as a part named \"file\": %w", ErrInvalid)
	}
	return infos, nil
}

// partPath is the filename of a multipart part as sent. Part.FileName
// keeps only its base name, but the SDKs put the whole destination path
// there. Browsers' FormData (and undici's) escape a quote, CR and LF in
// it as %22, %0D and %0A, which are turned back.
func partPath(part *multipart.Part) string {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return formNameUnescaper.Replace(params["filename"])
}
