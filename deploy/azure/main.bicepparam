// Example parameters: copy, set the images, and export POSTGRES_ADMIN_PASSWORD and
// WEBHOOK_SECRET_KEY (`openssl rand -base64 32`) before
//   az deployment group create -g <group> -f deploy/azure/main.bicep -p deploy/azure/main.bicepparam
using 'main.bicep'

param apiImage = 'myregistry.azurecr.io/sheetrelay-api:1.0.0'
param workerImage = 'myregistry.azurecr.io/sheetrelay-worker:1.0.0'
param registryServer = 'myregistry.azurecr.io'
param postgresAdminPassword = readEnvironmentVariable('POSTGRES_ADMIN_PASSWORD')
param webhookSecretKey = readEnvironmentVariable('WEBHOOK_SECRET_KEY')

// The consumer job's scaling (the defaults, spelled out).
param queueLength = 5
param maxExecutions = 20
param pollingInterval = 30
param replicaTimeout = 1800
