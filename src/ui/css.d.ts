// Stylesheets imported by the dashboard's modules are bundled by Bun; TypeScript only needs to know they exist.
declare module '*.css'
