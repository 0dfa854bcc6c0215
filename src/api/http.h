// cpp-httplib as Debian builds it. The shared library was compiled with
// OpenSSL, zlib and brotli support, and those macros change the layout of its
// classes: every translation unit that includes httplib.h must define the same
// ones, so include it only through this header.
#pragma once

#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif

#include <httplib.h>
