// The backend as a DSH user installs it (the npm tarballs, in `src/node_modules` here): the
// package DSH's own suites run on in `run.sh`, in place of the sources.
export * from '@sessdb/dsh-session-persistence'
export { default } from '@sessdb/dsh-session-persistence'
