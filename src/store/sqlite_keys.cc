// SqliteStore: API keys. Only the SHA-256 of a secret is stored; a secret is
// 48 hex chars (192 bits) from a CSPRNG, so a plain (unsalted, fast) hash is
// enough: there is no dictionary to attack.
#include <fmt/format.h>

#include "common/util.h"
#include "store/sqlite_store.h"

namespace assay {

Result<CreatedKey> SqliteStore::CreateKey(const std::string& name) {
  CreatedKey key;
  key.info.id = RandomId("k_");
  key.info.name = name;
  key.info.created_ms = NowUnixMs();
  key.secret = RandomId("assay_", 48);
  std::lock_guard<std::mutex> lock(writer_mu_);
  Result<Stmt> ins = writer_.Prepare(
      "INSERT INTO api_keys (id, name, secret_sha256, created_ms) VALUES (?1, ?2, ?3, ?4)");
  if (!ins.ok()) return ins.status();
  ins->Bind(1, key.info.id).Bind(2, name).Bind(3, Sha256Hex(key.secret)).Bind(4, key.info.created_ms);
  ASSAY_RETURN_IF_ERROR(ins->Run());
  return key;
}

Result<std::vector<ApiKeyInfo>> SqliteStore::ListKeys() {
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  Result<Stmt> q = (*r)->Prepare(
      "SELECT id, name, created_ms, revoked_ms IS NOT NULL FROM api_keys ORDER BY created_ms, id");
  if (!q.ok()) return q.status();
  std::vector<ApiKeyInfo> out;
  for (;;) {
    Result<bool> row = q->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(ApiKeyInfo{q->Text(0), q->Text(1), q->Int(2), q->Int(3) != 0});
  }
}

Status SqliteStore::RevokeKey(const std::string& id) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  // Revoking twice keeps the first revocation time.
  Result<Stmt> up = writer_.Prepare(
      "UPDATE api_keys SET revoked_ms = coalesce(revoked_ms, ?2) WHERE id = ?1");
  if (!up.ok()) return up.status();
  ASSAY_RETURN_IF_ERROR(up->Bind(1, id).Bind(2, NowUnixMs()).Run());
  if (writer_.changes() == 0) return Status::NotFound(fmt::format("no API key {}", id));
  return Status::Ok();
}

Result<std::string> SqliteStore::Authenticate(const std::string& secret) {
  // Looked up by the hash, never by the secret: the comparison SQLite makes
  // leaks nothing useful about the secret through timing.
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  Result<Stmt> q = (*r)->Prepare("SELECT id, revoked_ms IS NOT NULL FROM api_keys WHERE secret_sha256 = ?1");
  if (!q.ok()) return q.status();
  Result<bool> row = q->Bind(1, Sha256Hex(secret)).Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Unauthorized("unknown API key");
  if (q->Int(1) != 0) return Status::Unauthorized("API key revoked");
  return q->Text(0);
}

}  // namespace assay
