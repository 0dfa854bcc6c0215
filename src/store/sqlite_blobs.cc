// SqliteStore: content-addressed blobs.
#include <fmt/format.h>

#include "common/util.h"
#include "store/blob_codec.h"
#include "store/sqlite_store.h"

namespace assay {
namespace {

Status CheckHash(const std::string& hash) {
  if (IsBlobHash(hash)) return Status::Ok();
  return Status::Rejected("a blob hash is 64 lower-case hex characters (SHA-256)", "hash");
}

}  // namespace

Result<std::string> SqliteStore::PutBlob(std::string_view data) {
  if (static_cast<int64_t>(data.size()) > options_.max_blob_bytes) {
    return Status::Rejected(
        fmt::format("blob of {} bytes exceeds the limit of {} bytes", data.size(), options_.max_blob_bytes));
  }
  std::string hash = Sha256Hex(data);
  // Dedup before the expensive part: the same inputs are uploaded again and again.
  Result<bool> have = HasBlob(hash);
  if (!have.ok()) return have.status();
  if (*have) return hash;
  // Compress outside the writer mutex so other writes are not held up.
  Result<EncodedBlob> enc = EncodeBlob(data);
  if (!enc.ok()) return enc.status();

  std::lock_guard<std::mutex> lock(writer_mu_);
  // OR IGNORE: another thread may have stored the same bytes since HasBlob;
  // same hash, same content, nothing to do.
  Result<Stmt> ins = writer_.Prepare(
      "INSERT OR IGNORE INTO blobs (hash, raw_size, stored_size, codec, data, created_ms)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!ins.ok()) return ins.status();
  ins->Bind(1, hash).Bind(2, static_cast<int64_t>(data.size()));
  ins->Bind(3, static_cast<int64_t>(enc->data.size())).Bind(4, BlobCodecName(enc->codec));
  ins->BindBlob(5, enc->data).Bind(6, NowUnixMs());
  ASSAY_RETURN_IF_ERROR(ins->Run());
  return hash;
}

Result<std::string> SqliteStore::GetBlob(const std::string& hash) {
  ASSAY_RETURN_IF_ERROR(CheckHash(hash));
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  Result<Stmt> q = (*r)->Prepare("SELECT codec, raw_size, data FROM blobs WHERE hash = ?1");
  if (!q.ok()) return q.status();
  Result<bool> row = q->Bind(1, hash).Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound(fmt::format("no blob {}", hash));
  // Decoded while the row is current: Blob() points into SQLite's buffer.
  return DecodeBlob(q->Text(0), q->Blob(2), q->Int(1), hash);
}

Result<bool> SqliteStore::HasBlob(const std::string& hash) {
  ASSAY_RETURN_IF_ERROR(CheckHash(hash));
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  Result<Stmt> q = (*r)->Prepare("SELECT 1 FROM blobs WHERE hash = ?1");
  if (!q.ok()) return q.status();
  return q->Bind(1, hash).Step();
}

}  // namespace assay
