package cellsim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
)

// uploadArtifacts is POST /jobs/:id/artifacts, a multipart form whose "file" part can be GiBs:
// it is read part by part and hashed as it streams, never held in memory. 201 "201".
func (c *Cell) uploadArtifacts(ex *exchange) response {
	j, res := c.jobCall(ex, bodyFields{})
	if res.status != 0 {
		return res
	}
	mt, params, err := mime.ParseMediaType(ex.r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return jsonResponse(http.StatusBadRequest, map[string]string{"error": "file is missing"})
	}
	sum, size, found, err := hashFilePart(multipart.NewReader(ex.body, params["boundary"]))
	if err != nil {
		ex.rec.BodyErr = err.Error()
		if ex.r.Context().Err() != nil {
			ex.rec.Canceled = true
			return canceledResponse()
		}
		return jsonResponse(http.StatusBadRequest, map[string]string{"error": "bad multipart body"})
	}
	if !found {
		return jsonResponse(http.StatusBadRequest, map[string]string{"error": "file is missing"})
	}
	ex.rec.FileSHA256, ex.rec.FileSize = sum, size
	c.mu.Lock()
	defer c.mu.Unlock()
	j.artifactSHA256, j.artifactSize, j.hasArtifact = sum, size, true
	return textResponse(http.StatusCreated, "201")
}

// hashFilePart reads every part, hashing the one named "file".
func hashFilePart(mr *multipart.Reader) (sum string, size int64, found bool, err error) {
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return sum, size, found, nil
		}
		if err != nil {
			return "", 0, false, fmt.Errorf("next part: %w", err)
		}
		if p.FormName() != "file" || found {
			if _, err := io.Copy(io.Discard, p); err != nil {
				return "", 0, false, fmt.Errorf("part %q: %w", p.FormName(), err)
			}
			continue
		}
		h := sha256.New()
		n, err := io.Copy(h, p)
		if err != nil {
			return "", 0, false, fmt.Errorf("file part: %w", err)
		}
		sum, size, found = hex.EncodeToString(h.Sum(nil)), n, true
	}
}

// downloadArtifacts is GET /jobs/:id/artifacts: a redirect to object storage, as GitLab does
// with direct_download and remote storage.
func (c *Cell) downloadArtifacts(ex *exchange) response {
	j, res := c.jobCallAllowing(ex, bodyFields{}, c.opts.PublicArtifacts)
	if res.status != 0 {
		return res
	}
	c.mu.Lock()
	has := j.hasArtifact
	c.mu.Unlock()
	if !has {
		return messageResponse(http.StatusNotFound)
	}
	return emptyResponse(http.StatusFound).with("Location", c.ArtifactURL(j.id))
}

// PutArtifact stores content as job id's artifact, as an upload would, so a download is
// answered 302 without a runner uploading first.
func (c *Cell) PutArtifact(id uint64, content []byte) error {
	sum := sha256.Sum256(content)
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[id]
	if !ok {
		return fmt.Errorf("cellsim: put artifact of job %d: %w", id, ErrNoJob)
	}
	j.artifactSHA256, j.artifactSize, j.hasArtifact = hex.EncodeToString(sum[:]), int64(len(content)), true
	return nil
}

// ArtifactURL is where the cell redirects downloads of job id's artifacts.
func (c *Cell) ArtifactURL(id uint64) string {
	return fmt.Sprintf("%s/artifacts/%d/artifacts.zip?X-Amz-Expires=600&X-Amz-Signature=cell%d", c.opts.ObjectStorageURL, id, c.opts.CellID)
}
