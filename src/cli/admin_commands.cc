#include "cli/admin_commands.h"

#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "common/util.h"
#include "gpu/devices.h"
#include "store/store.h"

namespace assay::cli {
namespace {

Result<std::unique_ptr<Store>> OpenStore(const std::filesystem::path& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Status::Infra("cannot create " + data_dir.string() + ": " + ec.message());
  return OpenSqliteStore(data_dir / "assay.db");
}

}  // namespace

int KeysCreateCommand(const std::filesystem::path& data_dir, const std::string& name, bool json,
                      std::ostream& out, std::ostream& err) {
  if (name.empty()) return ReportError(Status::Rejected("a key needs a NAME", "name"), err);
  auto store = OpenStore(data_dir);
  if (!store.ok()) return ReportError(store.status(), err);
  auto key = (*store)->CreateKey(name);
  if (!key.ok()) return ReportError(key.status(), err);
  if (json) {
    out << nlohmann::json{{"id", key->info.id}, {"name", key->info.name}, {"secret", key->secret}}.dump(2) << "\n";
  } else {
    out << "created key " << key->info.id << " (" << key->info.name << ")\n"
        << "secret: " << key->secret << "\n"
        << "This secret is shown once and stored only as a hash. Clients send it as\n"
        << "  ASSAY_API_KEY=" << key->secret << "\n";
  }
  return kExitOk;
}

int KeysListCommand(const std::filesystem::path& data_dir, bool json, std::ostream& out, std::ostream& err) {
  auto store = OpenStore(data_dir);
  if (!store.ok()) return ReportError(store.status(), err);
  auto keys = (*store)->ListKeys();
  if (!keys.ok()) return ReportError(keys.status(), err);
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& k : *keys)
      list.push_back({{"id", k.id}, {"name", k.name}, {"created", FormatUnixMs(k.created_ms)}, {"revoked", k.revoked}});
    out << list.dump(2) << "\n";
    return kExitOk;
  }
  if (keys->empty()) {
    out << "No keys. Create one with `assay keys create NAME`.\n";
    return kExitOk;
  }
  Table t({"id", "name", "created", "revoked"});
  for (const auto& k : *keys) t.AddRow({k.id, k.name, FormatUnixMs(k.created_ms), k.revoked ? "yes" : "no"});
  out << t.Render();
  return kExitOk;
}

int KeysRevokeCommand(const std::filesystem::path& data_dir, const std::string& id, std::ostream& out,
                      std::ostream& err) {
  auto store = OpenStore(data_dir);
  if (!store.ok()) return ReportError(store.status(), err);
  Status s = (*store)->RevokeKey(id);
  if (!s.ok()) return ReportError(s, err);
  out << "revoked " << id << "\n";
  return kExitOk;
}

int LocalGpusCommand(bool json, std::ostream& out) { return PrintGpus(ToJson(ListGpus()), json, out); }

}  // namespace assay::cli
