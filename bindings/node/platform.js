'use strict'
// This machine's platform as sessdb's prebuilt addon packages are named (napi-rs's names):
// `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`, `win32-x64-msvc`, ... The one place it
// is computed: index.js loads the addon by it, build.sh and pack.sh name the file by it
// (`node platform.js` prints it).

function platformKey() {
  const { platform, arch } = process
  if (platform === 'linux') {
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null
    const glibc = report?.header?.glibcVersionRuntime
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`
  }
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

module.exports = { platformKey }

if (require.main === module) console.log(platformKey())
