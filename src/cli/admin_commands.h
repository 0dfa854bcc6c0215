// Commands of `assay` that work on this machine, not through a server:
// API keys in the local store, and the local GPU list.
// Thread-safety: run from main() only.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

namespace assay::cli {

// `assay keys create NAME`: prints the secret once (it is stored hashed).
int KeysCreateCommand(const std::filesystem::path& data_dir, const std::string& name, bool json,
                      std::ostream& out, std::ostream& err);
// `assay keys list`: id, name, created, revoked. Secrets are never shown.
int KeysListCommand(const std::filesystem::path& data_dir, bool json, std::ostream& out, std::ostream& err);
// `assay keys revoke ID`.
int KeysRevokeCommand(const std::filesystem::path& data_dir, const std::string& id, std::ostream& out,
                      std::ostream& err);
// `assay gpus --local`: ListGpus() on this machine; "No GPU found: <reason>" when none.
int LocalGpusCommand(bool json, std::ostream& out);

}  // namespace assay::cli
